package proxy

import (
	"bufio"
	"net"
	"sync"
	"time"

	"github.com/dsh-dev/dsh/netpolicy"
)

// Limits of the per-world pool of kept-alive upstream connections.
const (
	poolMaxIdlePerHost = 32
	poolMaxIdle        = 256
	poolIdleTimeout    = 90 * time.Second
)

// upConn is a kept-alive HTTP/1.1 connection to an upstream, judged by
// the Policy when it was dialled.
type upConn struct {
	c     net.Conn
	br    *bufio.Reader
	bw    *bufio.Writer
	dec   netpolicy.Decision
	since time.Time // when it went idle
}

func newUpConn(c net.Conn, dec netpolicy.Decision) *upConn {
	return &upConn{c: c, br: bufio.NewReaderSize(c, 4<<10), bw: bufio.NewWriterSize(c, 4<<10), dec: dec}
}

func (u *upConn) close() { u.c.Close() }

// upPool keeps idle upstream connections per host:port, so a forwarded
// request reuses one from the serving goroutine itself: no hand-off to
// other goroutines, as http.Transport would do, on the latency path.
// Policies are immutable, so a connection judged once stays judged.
type upPool struct {
	mu     sync.Mutex // guards the fields below
	idle   map[string][]*upConn
	n      int
	closed bool
}

// get returns the most recently idle connection to key, or nil.
func (pl *upPool) get(key string) *upConn {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	now := time.Now()
	for l := pl.idle[key]; len(l) > 0; l = pl.idle[key] {
		u := l[len(l)-1]
		pl.idle[key] = l[:len(l)-1]
		pl.n--
		if now.Sub(u.since) < poolIdleTimeout {
			return u
		}
		u.close()
	}
	return nil
}

// put keeps u for reuse, or closes it when the pool is full or closed.
func (pl *upPool) put(key string, u *upConn) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.closed || pl.n >= poolMaxIdle || len(pl.idle[key]) >= poolMaxIdlePerHost {
		u.close()
		return
	}
	if pl.idle == nil {
		pl.idle = map[string][]*upConn{}
	}
	// Evict what has idled too long, so a quiet pool does not hold
	// sockets the upstream has long closed.
	now := time.Now()
	l := pl.idle[key]
	for len(l) > 0 && now.Sub(l[0].since) >= poolIdleTimeout {
		l[0].close()
		l = l[1:]
		pl.n--
	}
	u.since = now
	pl.idle[key] = append(l, u)
	pl.n++
}

// closeAll closes every idle connection; later puts close theirs.
func (pl *upPool) closeAll() {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	pl.closed = true
	pl.dropLocked()
}

// drop closes every idle connection, and the pool stays open: after a
// policy change no connection judged under the old policy is reused.
func (pl *upPool) drop() {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	pl.dropLocked()
}

func (pl *upPool) dropLocked() {
	for k, l := range pl.idle {
		for _, u := range l {
			u.close()
		}
		delete(pl.idle, k)
	}
	pl.n = 0
}
