package pid1

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/dsh-dev/dsh/internal/pty"
	"github.com/dsh-dev/dsh/sandbox"
	"golang.org/x/sys/unix"
)

// outputPipeSize is the size asked for stdout and stderr pipes.
const outputPipeSize = 256 << 10

// childPipes are the init's ends of a started process's stdio. For a
// process with a terminal, stdout is the terminal's master side, stdin
// (if any) a duplicate of it, stderr an empty pipe, and tty the master
// again, for resizing.
type childPipes struct {
	stdin  *os.File // nil when the process reads /dev/null
	stdout *os.File
	stderr *os.File
	tty    *os.File // nil without a terminal
}

// start validates req, resolves argv[0] and starts the process in its own
// session (and so its own process group).
func (s *server) start(req *startRequest) (*child, *childPipes, error) {
	fail := func(kind error, format string, args ...any) error {
		return &StartError{Kind: kind, Msg: fmt.Sprintf(format, args...)}
	}
	if req.Version != protoVersion {
		return nil, nil, fail(ErrInvalidSpec, "protocol version %d, but this init speaks %d: run the same dsh binary on both sides", req.Version, protoVersion)
	}
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		return nil, nil, fail(ErrInvalidSpec, "empty argv")
	}
	if req.Dir != "" {
		fi, err := os.Stat(req.Dir)
		if err != nil {
			return nil, nil, fail(ErrBadDir, "working directory %q: %v", req.Dir, errors.Unwrap(err))
		}
		if !fi.IsDir() {
			return nil, nil, fail(ErrBadDir, "working directory %q is not a directory", req.Dir)
		}
	}
	// One entry per key, the last winning: for the PATH search here and
	// for getenv in the child, which would otherwise see the first one.
	env := sandbox.MergeEnv(req.Env)
	path, err := sandbox.LookPath(req.Argv[0], sandbox.PathOf(env), req.Dir)
	if err != nil {
		var pe *sandbox.PathError
		if errors.As(err, &pe) {
			return nil, nil, fail(pe.Kind, "%s", pe.Msg)
		}
		return nil, nil, fail(nil, "%v", err)
	}

	var files [3]*os.File // the child's ends
	var p *childPipes
	// Every process leads a session of its own, without a controlling
	// terminal unless it asked for one: nothing it does reaches a terminal
	// of another session. Its process group is its pid, which Signal and
	// the shutdown kill as a group.
	sys := &syscall.SysProcAttr{Setsid: true}
	if req.TTY != nil {
		if req.TTY.Rows == 0 || req.TTY.Cols == 0 {
			return nil, nil, fail(ErrInvalidSpec, "terminal size %dx%d: rows and columns must be at least 1", req.TTY.Rows, req.TTY.Cols)
		}
		var tty *os.File
		p, tty, err = openTerminal(req.TTY, req.Stdin)
		if err != nil {
			return nil, nil, fail(nil, "creating the terminal: %v", err)
		}
		files = [3]*os.File{tty, tty, tty}
		// The terminal becomes the session's controlling terminal: job
		// control and ^C work inside.
		sys.Setctty, sys.Ctty = true, 0
	} else {
		p, err = openPipes(&files, req.Stdin, req.Direct)
		if err != nil {
			return nil, nil, fail(nil, "creating stdio: %v", err)
		}
	}
	closeAll := func() {
		for _, f := range append(files[:], p.stdin, p.stdout, p.stderr) {
			if f != nil {
				f.Close()
			}
		}
	}
	attr := &syscall.ProcAttr{
		Dir:   req.Dir,
		Env:   env,
		Files: []uintptr{files[0].Fd(), files[1].Fd(), files[2].Fd()},
		Sys:   sys,
	}

	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		closeAll()
		return nil, nil, fail(nil, "the init is shutting down")
	}
	restoreOOM := s.oom.forChild()
	pid, err := s.forkExec(path, req.Argv, attr)
	restoreOOM()
	var c *child
	if err == nil {
		c = &child{pid: pid, status: make(chan exitReply, 1)}
		s.children[pid] = c
		s.groups[pid] = struct{}{}
	}
	s.mu.Unlock()

	for i := range files {
		files[i].Close()
		files[i] = nil
	}
	if err != nil {
		closeAll()
		var se *StartError // the forking thread's own failure
		if errors.As(err, &se) {
			return nil, nil, se
		}
		return nil, nil, execError(path, err)
	}
	return c, p, nil
}

// forkExec forks and executes a process of the world: on the forking
// thread where the world's processes have a cgroup of their own
// (forker), else on this one.
func (s *server) forkExec(path string, argv []string, attr *syscall.ProcAttr) (int, error) {
	if s.forker != nil {
		return s.forker.forkExec(path, argv, attr)
	}
	return syscall.ForkExec(path, argv, attr)
}

// openPipes creates the pipes of a process without a terminal; files
// receives the child's ends. The init's own ends are served by Go's
// poller where the init relays them; with direct stdio (direct) they go
// to the client, and like the child's ends are plain descriptors, with
// no poller registration to make and undo for every process.
func openPipes(files *[3]*os.File, withStdin, direct bool) (*childPipes, error) {
	p := &childPipes{}
	var err error
	if withStdin {
		files[0], p.stdin, err = pipe(false, !direct)
	} else {
		files[0], err = openDevNull()
	}
	if err == nil {
		p.stdout, files[1], err = pipe(!direct, false)
	}
	if err == nil {
		p.stderr, files[2], err = pipe(!direct, false)
	}
	if err != nil {
		for _, f := range append(files[:], p.stdin, p.stdout, p.stderr) {
			if f != nil {
				f.Close()
			}
		}
		return nil, err
	}
	// Bigger output pipes let each read forward more at once (64 KiB is
	// the default). Best effort: the limit is a sysctl.
	// (Not through Fd, which would take a polled pipe out of the poller.)
	for _, f := range []*os.File{p.stdout, p.stderr} {
		if rc, err := f.SyscallConn(); err == nil {
			rc.Control(func(fd uintptr) { unix.FcntlInt(fd, unix.F_SETPIPE_SZ, outputPipeSize) })
		}
	}
	return p, nil
}

// openDevNull opens /dev/null for a child's stdin: a plain descriptor,
// which os.Open would put in the poller for a child to take it out.
func openDevNull() (*os.File, error) {
	fd, err := unix.Open(os.DevNull, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: os.DevNull, Err: err}
	}
	return os.NewFile(uintptr(fd), os.DevNull), nil
}

// pipe makes a pipe, close-on-exec. An end marked polled is non-blocking
// and served by Go's poller; the others are plain blocking descriptors,
// as a child expects them.
func pipe(pollRead, pollWrite bool) (r, w *os.File, err error) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	for i, poll := range []bool{pollRead, pollWrite} {
		if !poll {
			continue
		}
		if err := unix.SetNonblock(fds[i], true); err != nil {
			unix.Close(fds[0])
			unix.Close(fds[1])
			return nil, nil, os.NewSyscallError("fcntl", err)
		}
	}
	// NewFile puts a non-blocking descriptor in the poller.
	return os.NewFile(uintptr(fds[0]), "|0"), os.NewFile(uintptr(fds[1]), "|1"), nil
}

// openTerminal creates a terminal of the given size in this process's
// /dev/pts and returns the init's ends with the terminal's process side.
// Stdin writes go to a duplicate of the master, so closing stdin (end of
// input) leaves the output flowing. Stderr is an empty pipe: everything
// the process prints arrives through the terminal, on stdout.
func openTerminal(size *windowSize, withStdin bool) (*childPipes, *os.File, error) {
	master, tty, err := pty.Open()
	if err != nil {
		return nil, nil, err
	}
	p := &childPipes{stdout: master, tty: master}
	fail := func(err error) (*childPipes, *os.File, error) {
		for _, f := range []*os.File{master, tty, p.stdin, p.stderr} {
			if f != nil {
				f.Close()
			}
		}
		return nil, nil, err
	}
	if err := pty.SetSize(master, size.Rows, size.Cols); err != nil {
		return fail(err)
	}
	if withStdin {
		if p.stdin, err = pty.Dup(master); err != nil {
			return fail(err)
		}
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	w.Close()
	p.stderr = r
	return p, tty, nil
}

// execError maps a fork/exec failure to a StartError. argv[0] was found
// and executable just before, so ENOENT means its #! interpreter or ELF
// loader is missing; bash 5.2 and dash report that as 127 ("required file
// not found"), and so does this.
func execError(path string, err error) error {
	e := &StartError{Msg: fmt.Sprintf("executing %s: %v", path, err)}
	switch {
	case errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ENOTDIR):
		e.Kind = ErrNotFound
		e.Msg = fmt.Sprintf("executing %s: its interpreter (#! line) or loader does not exist: %v", path, err)
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM),
		errors.Is(err, syscall.ENOEXEC), errors.Is(err, syscall.EISDIR),
		errors.Is(err, syscall.ETXTBSY), errors.Is(err, syscall.ELIBBAD):
		e.Kind = ErrNotExecutable
	case errors.Is(err, syscall.EINVAL):
		e.Kind = ErrInvalidSpec // NUL bytes in argv or env
	}
	return e
}
