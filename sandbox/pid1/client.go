package pid1

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"

	"github.com/dsh-dev/dsh/sandbox"
	"github.com/hashicorp/yamux"
)

// Client starts and controls processes through an init at the other end
// of one connection.
type Client struct {
	sess   *yamux.Session
	stdio  *stdioReceiver // nil: every process's stdio is relayed
	nextID atomic.Uint64
	closed atomic.Bool

	closeOnce sync.Once
	closeErr  error
}

// NewClient returns a client of the init serving conn. It does not wait
// for the init: a missing or foreign peer shows in the first Start, which
// takes a context.
//
// conn's Close must interrupt a blocked Read or Write, as net.Conn and
// os.Pipe files do (but not a file put in blocking mode by its Fd method):
// Close relies on it to end the session, and the init on the resulting
// EOF to kill everything.
func NewClient(conn io.ReadWriteCloser) (*Client, error) {
	sess, err := yamux.Client(conn, sessionConfig())
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("pid1: starting session: %w", err)
	}
	// The init is the untrusted side and has no reason to open streams.
	// Refuse them at the session level: yamux would otherwise buffer up
	// to a window of data for each stream it opened, without bound.
	// GoAway marks the session at once but then waits until its frame is
	// written, and NewClient must not block on a peer that is not reading
	// yet; the goroutine ends with the session at the latest.
	go sess.GoAway()
	return &Client{sess: sess}, nil
}

// NewDirectClient is NewClient for an init that also holds the other end
// of stdio, a unix SOCK_SEQPACKET socket pair (ServeOptions.Stdio): every
// process started without a terminal then has direct stdio (direct.go),
// its pipes read and written by this client with no hop through the
// init. Close closes stdio too.
func NewDirectClient(conn io.ReadWriteCloser, stdio *net.UnixConn) (*Client, error) {
	c, err := NewClient(conn)
	if err != nil {
		stdio.Close()
		return nil, err
	}
	c.stdio = newStdioReceiver(stdio)
	return c, nil
}

// Close closes the connection, which makes the init kill every process
// and exit. Processes still running report ErrClosed from Wait, and their
// unread output ends with it. Close is idempotent and safe to call
// concurrently; every call returns the first call's result.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		c.closeErr = c.sess.Close()
		if c.stdio != nil {
			c.stdio.conn.Close()
		}
	})
	return c.closeErr
}

// CloseAfter is Close for a driver that ends the init itself: end (its
// SIGKILL) runs first, with the client already closing, so a process cut
// off reports ErrClosed as after Close. The init then dies without the
// shutdown a closed connection would start in it (killing what it
// started, finding its children, reaping them), which its death as PID 1
// of the pid namespace does anyway.
func (c *Client) CloseAfter(end func()) error {
	c.closed.Store(true)
	end()
	return c.Close()
}

// lostErr is the error for a connection that ended under a process.
func (c *Client) lostErr() error {
	if c.closed.Load() {
		return ErrClosed
	}
	return ErrConnLost
}

// Start starts a process inside the sandbox and returns once the init has
// started it (or failed to: a *StartError, see ErrNotFound and
// ErrNotExecutable). ctx bounds the start only; afterwards the process
// runs until it exits, is signalled, or the client closes. A start
// abandoned because ctx ended kills the process if it had started.
//
// The init knows nothing of workspaces: an empty spec.Dir is the init's
// own working directory (drivers start the init in the workspace or fill
// Dir in), and spec.Env is the complete environment — with no PATH in it,
// argv[0] is searched in sandbox.DefaultPath.
// When a key repeats in Env, the last entry wins.
//
// Stdout and Stderr must be read concurrently with the process, as with
// pipes: the process blocks once about 1 MiB of either is unread (256 KiB
// with direct stdio: the pipe). Wait does not wait for the output to be
// read.
func (c *Client) Start(ctx context.Context, spec sandbox.ProcessSpec) (sandbox.Process, error) {
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return nil, &StartError{Dir: spec.Dir, Kind: ErrInvalidSpec, Msg: "empty argv: name the program to run"}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c.closed.Load() {
		return nil, ErrClosed
	}
	var tty *windowSize
	if spec.TTY != nil {
		if !spec.TTY.Valid() {
			return nil, &StartError{Argv0: spec.Argv[0], Dir: spec.Dir, Kind: ErrInvalidSpec,
				Msg: fmt.Sprintf("terminal size %dx%d: rows and columns must be at least 1", spec.TTY.Rows, spec.TTY.Cols)}
		}
		tty = &windowSize{Rows: spec.TTY.Rows, Cols: spec.TTY.Cols}
	}
	// A terminal is relayed: the init keeps its master for resizing.
	direct := c.stdio != nil && tty == nil
	req, merr := marshalLine(&message{Start: &startRequest{
		Version: protoVersion, Argv: spec.Argv, Dir: spec.Dir, Env: spec.Env, Stdin: spec.Stdin, TTY: tty, Direct: direct,
	}})
	if merr == nil && len(req) > maxRequestLine {
		merr = &StartError{Argv0: spec.Argv[0], Dir: spec.Dir, Kind: ErrInvalidSpec,
			Msg: fmt.Sprintf("argv and env encode to %d bytes, over the %d-byte limit of a start request", len(req), maxRequestLine)}
	}
	if merr != nil {
		return nil, merr
	}
	id := c.nextID.Add(1)
	p := newProcess(c, spec)
	if direct {
		n := 2
		if spec.Stdin {
			n = 3
		}
		p.direct = c.stdio.expect(id, n)
		p.id = id
	}

	// Data streams first, so they are usually there when the init reads
	// the start request.
	var err error
	open := func(kind byte, payload []byte) *yamux.Stream {
		if err != nil {
			return nil
		}
		var st *yamux.Stream
		if st, err = c.sess.OpenStream(); err != nil {
			return nil
		}
		if _, err = st.Write(append(encodeHeader(kind, id), payload...)); err != nil {
			st.Close()
			return nil
		}
		return st
	}
	if !direct {
		p.stdout.st = open(kindStdout, nil)
		p.stderr.st = open(kindStderr, nil)
		if spec.Stdin {
			if st := open(kindStdin, nil); st != nil {
				p.stdinSt = st
				p.stdin = &stdinPipe{st: st}
			}
		}
	}
	p.ctl = open(kindControl, req)
	if err != nil {
		p.closeStreams()
		if direct {
			c.stdio.forget(id)
		}
		if c.closed.Load() {
			return nil, ErrClosed
		}
		return nil, fmt.Errorf("pid1: starting %q: %w (%w)", spec.Argv[0], ErrConnLost, err)
	}
	go p.readControl()

	select {
	case err := <-p.startErr:
		if err != nil {
			p.closeStreams()
			return nil, err
		}
		return p, nil
	case <-ctx.Done():
		// Closing the control stream tells the init to kill the process
		// if it started it after all.
		close(p.abandon)
		p.closeStreams()
		return nil, ctx.Err()
	}
}
