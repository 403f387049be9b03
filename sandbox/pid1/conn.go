package pid1

import (
	"errors"
	"io"
	"sync"
	"time"

	"github.com/hashicorp/yamux"
)

// JoinConn joins a read side and a write side — typically a child
// process's stdout and stdin pipes — into one connection for NewClient or
// Serve. Close closes the write side first (so the peer sees EOF) and then
// the read side; it is idempotent.
func JoinConn(r io.ReadCloser, w io.WriteCloser) io.ReadWriteCloser {
	return &joinedConn{r: r, w: w}
}

type joinedConn struct {
	r    io.ReadCloser
	w    io.WriteCloser
	once sync.Once
	err  error
}

func (c *joinedConn) Read(b []byte) (int, error)  { return c.r.Read(b) }
func (c *joinedConn) Write(b []byte) (int, error) { return c.w.Write(b) }

func (c *joinedConn) Close() error {
	c.once.Do(func() {
		c.err = errors.Join(c.w.Close(), c.r.Close())
	})
	return c.err
}

// sessionConfig is the yamux configuration of both ends.
func sessionConfig() *yamux.Config {
	cfg := yamux.DefaultConfig()
	// The transport's EOF is the liveness signal (a pipe or an attach
	// stream); keep-alive pings would only add ways to kill a healthy but
	// busy sandbox.
	cfg.EnableKeepAlive = false
	// yamux fails a single stream write when the session cannot send for
	// this long, and the stream then silently misses those bytes. Output
	// must be exact, so writes wait for as long as the session lives;
	// closing the connection still unblocks them.
	cfg.ConnectionWriteTimeout = 365 * 24 * time.Hour
	// A slow peer (a loaded machine, a stopped debugger) must not make the
	// session close itself; only the transport ending does.
	cfg.StreamOpenTimeout = 0
	// Bigger windows than yamux's 256 KiB default keep large outputs
	// moving without a round trip per 256 KiB.
	cfg.MaxStreamWindowSize = 1 << 20
	// After a half-close yamux would reset a stream whose peer has not
	// closed its side within this time, and a reset stream drops the data
	// its reader has not consumed yet. A slow reader of a large output
	// must still get every byte, so streams are closed by the protocol
	// instead (the client closes its side at the end of the control
	// stream, after which nothing more can arrive).
	cfg.StreamCloseTimeout = 0
	cfg.LogOutput = io.Discard
	return cfg
}
