package docker

import (
	"io"
	"sync"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/pkg/stdcopy"
)

// attachConn is the init's control connection carried over a container's
// attach stream. Without a TTY docker multiplexes the container's stdout
// and stderr into frames with 8-byte headers; stdin is raw. Read returns
// the init's stdout (the protocol), Write feeds its stdin, and the init's
// stderr (its diagnostics) goes to a bounded buffer for error messages.
type attachConn struct {
	hj     types.HijackedResponse
	pr     *io.PipeReader
	stderr *tailBuffer
	done   chan struct{} // closed when the demultiplexer has stopped

	closeOnce sync.Once
}

func newAttachConn(hj types.HijackedResponse) *attachConn {
	pr, pw := io.Pipe()
	c := &attachConn{hj: hj, pr: pr, stderr: newTailBuffer(8 << 10), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		_, err := stdcopy.StdCopy(pw, c.stderr, hj.Reader)
		if err == nil {
			err = io.EOF
		}
		pw.CloseWithError(err)
	}()
	return c
}

func (c *attachConn) Read(p []byte) (int, error)  { return c.pr.Read(p) }
func (c *attachConn) Write(p []byte) (int, error) { return c.hj.Conn.Write(p) }

// Close ends the attach connection. Docker then closes the container's
// stdin (StdinOnce), and the init kills every process and exits.
func (c *attachConn) Close() error {
	c.closeOnce.Do(func() {
		c.hj.Close()
		c.pr.Close()
	})
	return nil
}

// Stderr returns the last bytes the init wrote to its stderr.
func (c *attachConn) Stderr() string { return c.stderr.String() }

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex // guards buf
	max int
	buf []byte
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
