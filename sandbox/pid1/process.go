package pid1

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dsh-dev/dsh/sandbox"
	"github.com/hashicorp/yamux"
)

// process is the client's handle of a process inside the sandbox.
type process struct {
	c    *Client
	spec sandbox.ProcessSpec

	ctl   *yamux.Stream
	stdin *stdinPipe // nil without a stdin pipe
	// stdinSt is the relayed stdin's stream (closeStreams may run before
	// Start returns, so not through stdin, which direct stdio sets late).
	stdinSt *yamux.Stream
	// direct, with direct stdio, is where the pipes arrive (id names the
	// process there); abandon is closed when Start gives up waiting.
	direct  *pendingStdio
	id      uint64
	abandon chan struct{}
	stdout  outputReader
	stderr  outputReader

	startErr chan error // receives the start result once
	pid      atomic.Int64

	done   chan struct{} // closed when status/err are set
	status sandbox.ExitStatus
	err    error

	ctlDone chan struct{} // closed when the control stream has ended
}

func newProcess(c *Client, spec sandbox.ProcessSpec) *process {
	p := &process{
		c:        c,
		spec:     spec,
		startErr: make(chan error, 1),
		done:     make(chan struct{}),
		ctlDone:  make(chan struct{}),
		abandon:  make(chan struct{}),
	}
	p.stdout.init("stdout", p)
	p.stderr.init("stderr", p)
	return p
}

func (p *process) Stdin() io.WriteCloser {
	if p.stdin == nil {
		return nil
	}
	return p.stdin
}

func (p *process) Stdout() io.Reader { return &p.stdout }
func (p *process) Stderr() io.Reader { return &p.stderr }

// Pid is the process's pid inside the sandbox (for messages only).
func (p *process) Pid() int { return int(p.pid.Load()) }

// Signal sends sig to the process's whole process group, inside the
// sandbox. It works until the process has exited and every holder of its
// output pipes is gone; then it returns ErrProcessDone.
func (p *process) Signal(sig syscall.Signal) error {
	if sig <= 0 || sig > 64 {
		return fmt.Errorf("pid1: signal %d: not a signal number in 1..64", int(sig))
	}
	return p.control(&message{Signal: int(sig)}, "signalling")
}

// Resize changes the size of the process's terminal. Like Signal, it
// works until the process has exited and its output has ended.
func (p *process) Resize(size sandbox.WindowSize) error {
	if p.spec.TTY == nil {
		return sandbox.ErrNoTTY
	}
	if !size.Valid() {
		return fmt.Errorf("pid1: terminal size %dx%d: rows and columns must be at least 1", size.Rows, size.Cols)
	}
	return p.control(&message{Resize: &windowSize{Rows: size.Rows, Cols: size.Cols}}, "resizing the terminal of")
}

// control sends m on the process's control stream, or says why it cannot.
func (p *process) control(m *message, what string) error {
	select {
	case <-p.ctlDone:
		return p.endErr()
	default:
	}
	if err := writeMessage(p.ctl, m); err != nil {
		select {
		case <-p.ctlDone:
			return p.endErr()
		default:
		}
		return fmt.Errorf("pid1: %s %q: %w", what, p.spec.Argv[0], p.c.lostErr())
	}
	return nil
}

// endErr is Signal's error once the control stream has ended.
func (p *process) endErr() error {
	<-p.done
	if p.err != nil {
		return p.err
	}
	return ErrProcessDone
}

// Wait returns the process's exit status once it has exited. It may be
// called any number of times, concurrently.
func (p *process) Wait() (sandbox.ExitStatus, error) {
	<-p.done
	return p.status, p.err
}

func (p *process) closeStreams() {
	for _, st := range []*yamux.Stream{p.ctl, p.stdout.st, p.stderr.st} {
		if st != nil {
			st.Close()
		}
	}
	if p.stdinSt != nil {
		p.stdinSt.Close()
	}
}

// closeFiles ends direct stdio once the control stream has ended: an
// output whose end the client has not seen is cut short (a Read in
// progress returns), one it has seen stays readable to its end.
func (p *process) closeFiles() {
	for _, r := range []*outputReader{&p.stdout, &p.stderr} {
		if r.f != nil {
			r.stopWatch()
			if !r.endSeen.Load() {
				r.f.Close()
			}
		}
	}
}

// attach takes direct stdio's pipes once the init has started the
// process and sent them.
func (p *process) attach() error {
	files, err := p.c.stdio.take(p.direct, p.abandon)
	if err != nil {
		return fmt.Errorf("pid1: starting %q: %w", p.spec.Argv[0], err)
	}
	p.stdout.f, p.stderr.f = files[0], files[1]
	if len(files) == 3 {
		p.stdin = &stdinPipe{f: files[2]}
	}
	return nil
}

// readControl reads the init's messages about the process until the init
// closes the control stream or the connection ends.
func (p *process) readControl() {
	if p.direct != nil {
		defer p.c.stdio.forget(p.id)
	}
	r := bufio.NewReader(p.ctl)
	started, exited := false, false
	var lost error
	for {
		var m message
		if err := readMessage(r, maxReplyLine, &m); err != nil {
			if err != io.EOF {
				lost = fmt.Errorf("%w: reading control stream: %v", p.c.lostErr(), err)
			}
			break
		}
		switch {
		case m.Started != nil && !started:
			started = true
			p.pid.Store(int64(m.Started.Pid))
			var err error
			if p.direct != nil {
				// The init sent the pipes before this answer.
				err = p.attach()
			}
			p.startErr <- err
		case m.Error != nil && !started:
			started = true
			kind := errorKinds[m.Error.Kind]
			p.startErr <- &StartError{Argv0: p.spec.Argv[0], Dir: p.spec.Dir, Kind: kind, Msg: truncate(m.Error.Msg)}
		case m.Exit != nil && started && !exited:
			exited = true
			p.status = sandbox.ExitStatus{Code: m.Exit.Code, Signal: syscall.Signal(m.Exit.Signal)}
			if p.direct != nil {
				p.stdout.watchEnd()
				p.stderr.watchEnd()
			}
			close(p.done)
		case m.Output != nil:
			switch m.Output.Stream {
			case "stdout":
				p.stdout.confirm(m.Output.N)
			case "stderr":
				p.stderr.confirm(m.Output.N)
			}
		case m.StdinClosed && p.stdin != nil:
			p.stdin.broken()
		}
	}
	// The control stream ended. Normally the init has reported
	// everything by now; whatever it has not is lost.
	if lost == nil {
		lost = p.c.lostErr()
	}
	if !started {
		p.startErr <- fmt.Errorf("pid1: starting %q: %w", p.spec.Argv[0], lost)
		close(p.done) // nobody waits for a process that never started
	} else if !exited {
		p.err = fmt.Errorf("pid1: waiting for %q: %w", p.spec.Argv[0], lost)
		close(p.done)
	}
	p.stdout.end(lost)
	p.stderr.end(lost)
	if p.stdin != nil {
		p.stdin.broken()
	}
	// Direct stdio: the init closes the control stream after both outputs
	// were read to their ends, unless the connection ended first; then
	// they end now, as relayed outputs do.
	p.closeFiles()
	close(p.ctlDone)
	// Nothing more can arrive on any stream of the process: the init sent
	// each stream's end before closing the control stream. Closing our
	// sides frees them at both ends; data already received stays readable.
	p.closeStreams()
}

func truncate(s string) string {
	if len(s) > 4096 {
		return s[:4096] + "..."
	}
	return s
}

// outputReader is a process's stdout or stderr. It ends with io.EOF only
// when the init confirmed the stream's total length and every byte of it
// was read; a stream cut short ends with ErrConnLost or ErrClosed.
type outputReader struct {
	name string
	p    *process
	st   *yamux.Stream
	f    *os.File // direct stdio: the pipe itself, instead of st
	// endSeen (direct stdio) is set once the client saw the end of the
	// pipe — EOF, or a hangup watchEnd saw — and told the init.
	endSeen atomic.Bool
	watchMu sync.Mutex
	watch   *os.File // watchEnd's duplicate of f
	stopped bool     // no more watching

	n   int64 // bytes read so far; touched by the reading goroutine only
	err error // sticky end of the stream; reading goroutine only

	once      sync.Once
	ended     chan struct{} // closed once total or lost is set
	total     int64
	confirmed bool
	lost      error
}

func (r *outputReader) init(name string, p *process) {
	r.name = name
	r.p = p
	r.ended = make(chan struct{})
}

func (r *outputReader) confirm(n int64) {
	r.once.Do(func() {
		r.total, r.confirmed = n, true
		close(r.ended)
	})
}

func (r *outputReader) end(lost error) {
	r.once.Do(func() {
		r.lost = lost
		close(r.ended)
	})
}

func (r *outputReader) Read(b []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if r.f != nil {
		return r.readPipe(b)
	}
	n, err := r.st.Read(b)
	r.n += int64(n)
	if err == nil {
		return n, nil
	}
	if err == io.EOF {
		<-r.ended // the init reports the total before it closes the stream
		switch {
		case r.confirmed && r.total == r.n:
			r.err = io.EOF
		case r.confirmed:
			r.err = fmt.Errorf("pid1: %s of %q: received %d bytes, init sent %d: %w", r.name, r.p.spec.Argv[0], r.n, r.total, ErrConnLost)
		default:
			r.err = fmt.Errorf("pid1: %s of %q cut short: %w", r.name, r.p.spec.Argv[0], r.lost)
		}
	} else {
		r.err = fmt.Errorf("pid1: reading %s of %q: %w (%v)", r.name, r.p.spec.Argv[0], r.p.c.lostErr(), err)
	}
	return n, r.err
}

// readPipe reads direct stdio's pipe. Its EOF is the end of the output:
// every holder of the pipe's write end is gone.
func (r *outputReader) readPipe(b []byte) (int, error) {
	n, err := r.f.Read(b)
	switch {
	case err == nil:
		return n, nil
	case err == io.EOF:
		r.err = io.EOF
		r.seeEnd()
		r.f.Close()
	case errors.Is(err, os.ErrClosed):
		<-r.ended // readControl ended the output before closing the pipe
		r.err = fmt.Errorf("pid1: %s of %q cut short: %w", r.name, r.p.spec.Argv[0], r.lost)
	default:
		r.err = fmt.Errorf("pid1: reading %s of %q: %w", r.name, r.p.spec.Argv[0], err)
	}
	return n, r.err
}

// stdinPipe is a process's stdin.
type stdinPipe struct {
	st       *yamux.Stream
	f        *os.File // direct stdio: the pipe itself, instead of st
	isBroken atomic.Bool
	isClosed atomic.Bool
}

func (w *stdinPipe) Write(b []byte) (int, error) {
	if w.isClosed.Load() {
		return 0, fmt.Errorf("pid1: writing stdin: %w", os.ErrClosed)
	}
	if w.isBroken.Load() {
		return 0, ErrBrokenPipe
	}
	if w.f != nil {
		n, err := w.f.Write(b)
		switch {
		case err == nil:
			return n, nil
		case isPipeEnd(err), w.isBroken.Load():
			return n, ErrBrokenPipe
		case w.isClosed.Load():
			return n, fmt.Errorf("pid1: writing stdin: %w", os.ErrClosed)
		}
		return n, fmt.Errorf("pid1: writing stdin: %w", err)
	}
	n, err := w.st.Write(b)
	if err != nil {
		if w.isBroken.Load() || errors.Is(err, yamux.ErrStreamClosed) {
			return n, ErrBrokenPipe
		}
		return n, fmt.Errorf("pid1: writing stdin: %w (%v)", ErrConnLost, err)
	}
	return n, nil
}

// Close closes stdin: the process reads EOF once it has read what was
// written before.
func (w *stdinPipe) Close() error {
	w.isClosed.Store(true)
	if w.f != nil {
		if err := w.f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
			return err
		}
		return nil
	}
	return w.st.Close()
}

// broken makes later writes fail and ends a write blocked on the stream's
// window.
func (w *stdinPipe) broken() {
	w.isBroken.Store(true)
	if w.f != nil {
		w.f.Close()
		return
	}
	w.st.SetWriteDeadline(time.Now())
}

func marshalLine(m *message) ([]byte, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
