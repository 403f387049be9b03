package host

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"github.com/dsh-dev/dsh/internal/pty"
	"github.com/dsh-dev/dsh/sandbox"
)

// process is a host process leading its own process group.
type process struct {
	cmd    *exec.Cmd
	pgid   int
	stdin  io.WriteCloser
	stdout *eofCloser
	stderr *eofCloser
	tty    *os.File // the terminal's master, nil without ProcessSpec.TTY

	done   chan struct{} // closed after the process has been reaped
	status sandbox.ExitStatus
	err    error

	sigMu sync.Mutex // serialises signals
}

// eofCloser closes its file when the reader reaches EOF, so a drained
// stream gives its descriptor back without a Close call.
type eofCloser struct {
	f    *os.File
	once sync.Once
}

func (e *eofCloser) Read(b []byte) (int, error) {
	// pty.Reader: a terminal's master ends with EIO; a pipe is unchanged.
	n, err := pty.Reader(e.f).Read(b)
	if err != nil {
		e.close()
	}
	return n, err
}

func (e *eofCloser) close() { e.once.Do(func() { e.f.Close() }) }

func start(argv []string, dir string, env []string, withStdin bool, tty *sandbox.WindowSize) (*process, error) {
	if len(argv) == 0 {
		return nil, errors.New("host: empty argv")
	}
	// Resolved as inside a world: with the process's own PATH, never
	// dsh's, so a Spec means the same program on every driver.
	path, err := sandbox.LookPath(argv[0], sandbox.PathOf(env), dir)
	if err != nil {
		return nil, fmt.Errorf("host: %w", err)
	}
	cmd := &exec.Cmd{
		Path: path,
		Args: argv,
		Dir:  dir,
		// Never nil: a nil Env would hand the child dsh's own environment.
		Env: append([]string{}, env...),
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid: true,
			// If dsh dies, its direct children die with it. (The signal is
			// tied to the forking thread; Go ends a thread only when a
			// goroutine exits while locked to it, which dsh does not do
			// on threads that start processes.)
			Pdeathsig: syscall.SIGKILL,
		},
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	var closeAfter, closeOnFail []*os.File
	if tty != nil {
		closeAfter, closeOnFail, err = p.terminal(tty, withStdin)
	} else {
		closeAfter, closeOnFail, err = p.pipes(withStdin)
	}
	if err != nil {
		return nil, err
	}
	err = cmd.Start()
	for _, f := range closeAfter {
		f.Close()
	}
	if err != nil {
		for _, f := range closeOnFail {
			f.Close()
		}
		return nil, fmt.Errorf("host: starting %s: %w", argv[0], err)
	}
	p.pgid = cmd.Process.Pid
	go p.reap()
	return p, nil
}

// pipes gives the process stdio pipes (stdin only if withStdin). It
// returns the child's ends, closed once it has started, and dsh's ends,
// closed if it fails to.
func (p *process) pipes(withStdin bool) (child, ours []*os.File, err error) {
	fail := func(err error) ([]*os.File, []*os.File, error) {
		for _, f := range append(child, ours...) {
			f.Close()
		}
		return nil, nil, err
	}
	if withStdin {
		r, w, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		p.cmd.Stdin, p.stdin = r, w
		child, ours = append(child, r), append(ours, w)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	child, ours = append(child, outW), append(ours, outR)
	errR, errW, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	child, ours = append(child, errW), append(ours, errR)
	// *os.File outputs go to the child directly, with no copying goroutine
	// inside exec.Cmd: Wait then does not wait for the pipes to close.
	p.cmd.Stdout, p.cmd.Stderr = outW, errW
	p.stdout, p.stderr = &eofCloser{f: outR}, &eofCloser{f: errR}
	return child, ours, nil
}

// terminal gives the process a terminal of the given size as stdio and
// controlling terminal, in a new session. Its output is stdout; stderr
// is an empty stream; stdin (if withStdin) types into the terminal.
func (p *process) terminal(size *sandbox.WindowSize, withStdin bool) (child, ours []*os.File, err error) {
	master, tty, err := pty.Open()
	if err != nil {
		return nil, nil, fmt.Errorf("host: %w", err)
	}
	child, ours = []*os.File{tty}, []*os.File{master}
	fail := func(err error) ([]*os.File, []*os.File, error) {
		for _, f := range append(child, ours...) {
			f.Close()
		}
		return nil, nil, fmt.Errorf("host: terminal: %w", err)
	}
	if err := pty.SetSize(master, size.Rows, size.Cols); err != nil {
		return fail(err)
	}
	if withStdin {
		in, err := pty.Dup(master)
		if err != nil {
			return fail(err)
		}
		p.stdin = in
		ours = append(ours, in)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	errW.Close()
	ours = append(ours, errR)
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = tty, tty, tty
	p.cmd.SysProcAttr.Setpgid = false
	p.cmd.SysProcAttr.Setsid, p.cmd.SysProcAttr.Setctty = true, true
	p.stdout, p.stderr, p.tty = &eofCloser{f: master}, &eofCloser{f: errR}, master
	return child, ours, nil
}

func (p *process) reap() {
	err := p.cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		p.status = sandbox.ExitStatus{Code: 0}
	case errors.As(err, &ee):
		ws := ee.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			p.status = sandbox.ExitStatus{Code: -1, Signal: ws.Signal()}
		} else {
			p.status = sandbox.ExitStatus{Code: ws.ExitStatus()}
		}
	default:
		p.status = sandbox.ExitStatus{Code: -1}
		p.err = err
	}
	close(p.done)
}

func (p *process) Stdin() io.WriteCloser {
	if p.stdin == nil {
		return nil
	}
	return p.stdin
}
func (p *process) Stdout() io.Reader { return p.stdout }
func (p *process) Stderr() io.Reader { return p.stderr }

// Signal sends sig to the process group. After the leader is reaped the
// group may live on (background children), and its ID cannot be reused
// while any member lives, so signalling it stays safe; an empty group
// gives ESRCH, which is not an error here. (Once the group is empty the
// kernel could in principle hand its number to a new group leader; that
// needs the whole PID space to wrap around in between, which this
// unconfined development driver accepts.)
func (p *process) Signal(sig syscall.Signal) error {
	p.sigMu.Lock()
	defer p.sigMu.Unlock()
	err := syscall.Kill(-p.pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// Resize sets the size of the process's terminal.
func (p *process) Resize(size sandbox.WindowSize) error {
	if p.tty == nil {
		return sandbox.ErrNoTTY
	}
	if !size.Valid() {
		return fmt.Errorf("host: terminal size %dx%d: rows and columns must be at least 1", size.Rows, size.Cols)
	}
	return pty.SetSize(p.tty, size.Rows, size.Cols)
}

func (p *process) Wait() (sandbox.ExitStatus, error) {
	<-p.done
	return p.status, p.err
}
