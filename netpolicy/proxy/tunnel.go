package proxy

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// tunnelChunk is how many bytes one splice loop moves before the byte
// counters (metrics, idle fallback) are updated: large enough that the
// bookkeeping costs nothing next to the copy.
const tunnelChunk = 1 << 20

// errTunnelIdle is the audit error of a tunnel closed for inactivity.
var errTunnelIdle = errors.New("idle timeout")

// tunnel carries bytes both ways between the client and up until both
// directions end, either side fails, or the tunnel sits idle for the
// IdleTimeout. Between two TCP sockets (and from a unix socket client)
// the kernel moves the bytes with splice(2): no user-space buffer, no
// copy. It uses the calling goroutine plus one, and one runtime timer.
func (cc *clientConn) tunnel(up net.Conn) (upN, downN int64, err error) {
	t := &tunnelState{client: cc.c, up: up, idle: cc.p.opts.IdleTimeout}
	upC, downC := cc.p.opts.Metrics.byteCounters(cc.w.name)
	t.timer = time.AfterFunc(t.idle, t.checkIdle)
	defer t.timer.Stop()

	var wg sync.WaitGroup
	var downErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		downN, downErr = t.copy(cc.c, up, &t.downBytes, downC)
	}()
	upN, err = t.copy(up, cc.c, &t.upBytes, upC)
	wg.Wait()
	up.Close()
	if t.idled.Load() {
		return upN, downN, errTunnelIdle
	}
	if err == nil {
		err = downErr
	}
	if err != nil && cc.state.Load() == stateClosed {
		err = errors.New("proxy shut down")
	}
	return upN, downN, err
}

type tunnelState struct {
	client, up net.Conn
	idle       time.Duration
	timer      *time.Timer
	upBytes    atomic.Int64
	downBytes  atomic.Int64
	seen       int64 // byte total at the previous idle check; timer only
	idled      atomic.Bool
}

// copy moves bytes from src to dst until EOF or an error. At EOF it
// half-closes dst so the peer sees the end while the other direction may
// still run; on an error it closes both sides so the other direction ends.
func (t *tunnelState) copy(dst, src net.Conn, count *atomic.Int64, m prometheus.Counter) (int64, error) {
	total, err := spliceCopy(dst, src, func(n int64) {
		count.Add(n)
		if m != nil {
			m.Add(float64(n))
		}
	})
	if err != nil {
		t.client.Close()
		t.up.Close()
		return total, err
	}
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	} else {
		dst.Close()
	}
	return total, nil
}

// spliceCopy copies src to dst in chunks, calling progress after each.
// For a *net.TCPConn dst, ReadFrom with an io.LimitedReader over a TCP or
// unix src is the standard library's splice path; towards a unix socket,
// a TCP src's WriteTo splices. Other pairs fall back to a pooled buffer.
func spliceCopy(dst, src net.Conn, progress func(int64)) (int64, error) {
	var total int64
	if rf, ok := dst.(io.ReaderFrom); ok {
		lr := &io.LimitedReader{R: src}
		for {
			lr.N = tunnelChunk
			n, err := rf.ReadFrom(lr)
			total += n
			if n > 0 {
				progress(n)
			}
			if err != nil {
				return total, err
			}
			if lr.N > 0 { // src reached EOF before the chunk was full
				return total, nil
			}
		}
	}
	if _, ok := dst.(*net.UnixConn); ok {
		if wt, ok := src.(io.WriterTo); ok {
			n, err := wt.WriteTo(dst)
			if n > 0 {
				progress(n)
			}
			return n, err
		}
	}
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			w, werr := dst.Write(buf[:n])
			total += int64(w)
			progress(int64(w))
			if werr != nil {
				return total, werr
			}
		}
		if rerr == io.EOF {
			return total, nil
		}
		if rerr != nil {
			return total, rerr
		}
	}
}

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// checkIdle runs on the tunnel's timer. It closes the tunnel when neither
// direction has carried a byte for the idle timeout, else re-arms. The
// kernel's per-socket timestamps of the upstream connection (TCP_INFO:
// last data sent, last data received) cover both directions even while a
// long splice is in progress; where they are unavailable the chunk
// counters are compared between checks.
func (t *tunnelState) checkIdle() {
	if idleFor, ok := socketIdle(t.up); ok {
		if idleFor < t.idle {
			t.timer.Reset(t.idle - idleFor)
			return
		}
	} else {
		n := t.upBytes.Load() + t.downBytes.Load()
		if n != t.seen {
			t.seen = n
			t.timer.Reset(t.idle)
			return
		}
	}
	t.idled.Store(true)
	t.client.Close()
	t.up.Close()
}
