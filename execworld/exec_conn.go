package execworld

import (
	"context"
	"io"
	"os"
	"sync"
	"time"
)

// Conn is the process's stdio as one stream, for a JSON-RPC client or the
// MCP go-sdk's IOTransport: Read reads its stdout, Write writes its stdin.
// It is nil unless the command was started with both StdinPipe and
// StdoutPipe.
//
// Close closes the process's stdin (the process sees EOF) and stops
// reading: later Reads and Writes return os.ErrClosed, and whatever the
// process still prints is drained into the tail, so it never blocks on a
// full pipe. A Read in progress returns when its bytes arrive. Close does
// not end the process; Shutdown does.
func (r *Running) Conn() io.ReadWriteCloser {
	if r.stdin == nil || r.stdout == nil {
		return nil
	}
	r.connOnce.Do(func() { r.conn = &conn{r: r} })
	return r.conn
}

type conn struct {
	r      *Running
	readMu sync.Mutex // serialises Reads with the drain that follows Close

	mu     sync.Mutex // guards closed
	closed bool
	once   sync.Once
}

func (c *conn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

func (c *conn) Read(p []byte) (int, error) {
	c.readMu.Lock()
	defer c.readMu.Unlock()
	if c.isClosed() {
		return 0, os.ErrClosed
	}
	return c.r.stdout.Read(p)
}

func (c *conn) Write(p []byte) (int, error) {
	if c.isClosed() {
		return 0, os.ErrClosed
	}
	return c.r.stdin.Write(p)
}

func (c *conn) Close() error {
	var err error
	c.once.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		err = c.r.stdin.Close()
		go func() {
			c.readMu.Lock()
			defer c.readMu.Unlock()
			io.Copy(io.Discard, c.r.stdout)
		}()
	})
	return err
}

// Shutdown ends the command gracefully, as the MCP go-sdk's
// CommandTransport ends a server: it closes stdin (StdinPipe), waits up
// to the grace (Cmd.Grace, else DefaultGrace) for the process to exit on
// its own, then sends SIGTERM to its group, waits the grace again and
// sends SIGKILL. It returns once the process has exited; Wait gives the
// Result, which reports Canceled if a signal was needed. A command
// without a stdin pipe gets SIGTERM at once. If ctx ends first, the group
// is killed at once and Shutdown returns ctx's error after the exit.
func (r *Running) Shutdown(ctx context.Context) error {
	if r.stdin != nil {
		r.stdin.Close()
		select {
		case <-r.exited:
			<-r.done
			return nil
		case <-time.After(r.grace):
		case <-ctx.Done():
			return r.killAndWait(ctx)
		}
	}
	r.end(&r.canceled) // SIGTERM, then SIGKILL after the grace
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		return r.killAndWait(ctx)
	}
}

func (r *Running) killAndWait(ctx context.Context) error {
	r.markEnd(&r.canceled)
	r.kill()
	<-r.done
	return context.Cause(ctx)
}
