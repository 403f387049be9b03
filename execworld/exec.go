package execworld

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/dsh-dev/dsh/sandbox"
	"golang.org/x/sys/unix"
)

// Defaults of a command, as the reference shell tool has them.
const (
	// DefaultTimeout bounds Run when Cmd.Timeout is zero.
	DefaultTimeout = 120 * time.Second
	// MaxTimeout is the longest Timeout Run accepts.
	MaxTimeout = 600 * time.Second
	// DefaultGrace is the time between SIGTERM and SIGKILL.
	DefaultGrace = 3 * time.Second
)

// TimeoutCode is the status of a command that ran out of time, as
// timeout(1) reports it.
const TimeoutCode = 124

// Cmd is one command to run inside a world. There is no implicit shell:
// Argv[0] is the program; to run a shell line, pass
// []string{"bash", "-c", line}.
type Cmd struct {
	// Argv is the program and its arguments; it must not be empty.
	Argv []string
	// Dir is the working directory: relative to the workspace root, or an
	// absolute path inside the workspace. If empty, the root.
	Dir string
	// Env entries (KEY=VALUE) added to the Spec's Env; an entry here wins
	// over the Spec's entry with the same key. The host environment never
	// enters.
	Env []string

	// Stdin, if non-nil, is copied to the process's stdin, which is then
	// closed. If nil (and StdinPipe is false), stdin is /dev/null.
	Stdin io.Reader
	// StdinPipe (Start only) gives the process a stdin pipe, written
	// through Running.Stdin.
	StdinPipe bool

	// Stdout and Stderr, if non-nil, receive the output as it arrives.
	// A writer that fails is dropped; the process is never stalled by it.
	// Whatever the writers, the last MaxOutputBytes of each stream are
	// kept in the Result.
	Stdout, Stderr io.Writer
	// StdoutPipe (Start only) makes the process's stdout readable through
	// Running.Stdout instead; the reader applies back-pressure (a language
	// server waits until its output is read). Bytes read are also kept in
	// the tail, so the Result's stdout tail holds what had been read when
	// the process exited. Not allowed together with Stdout.
	StdoutPipe bool
	// TTY, if set, runs the command on a terminal of this size, made
	// inside the world (interactive programs, shells): everything it
	// prints arrives on Stdout (the terminal turns \n into \r\n), Stderr
	// stays empty, and Stdin or StdinPipe is typed into the terminal.
	// Running.Resize changes the size.
	TTY *WindowSize

	// MaxOutputBytes is the tail kept of each stream. If zero,
	// DefaultMaxOutputBytes.
	MaxOutputBytes int

	// Timeout ends the command (SIGTERM to its process group, Grace,
	// SIGKILL) and makes its status TimeoutCode. Run: if zero,
	// DefaultTimeout; over MaxTimeout is an error. Start: if zero, no
	// timeout (long-lived servers); Running.Stop, Running.Shutdown and
	// World.Close still end it.
	Timeout time.Duration
	// Grace is the time between SIGTERM and SIGKILL, and in
	// Running.Shutdown also the time a process gets to exit after its
	// stdin closes. If zero, DefaultGrace.
	Grace time.Duration
}

// Exec runs processes inside a world.
type Exec struct{ w *World }

// Run runs c to completion and returns its Result. A non-zero exit, a
// signal or a timeout is a Result, not an error. If ctx is cancelled the
// process tree is terminated and Run returns the Result so far together
// with ctx's error. An error alone means nothing ran (a *StartError says
// whether the program was missing or not executable).
func (e *Exec) Run(ctx context.Context, c *Cmd) (*Result, error) {
	if c.StdinPipe || c.StdoutPipe {
		return nil, fmt.Errorf("%w: StdinPipe and StdoutPipe need Start; Run has nobody to feed or read them", ErrInvalidCmd)
	}
	if c.Timeout > MaxTimeout {
		return nil, fmt.Errorf("%w: timeout %v is over the %v maximum", ErrInvalidCmd, c.Timeout, MaxTimeout)
	}
	cc := *c
	if cc.Timeout <= 0 {
		cc.Timeout = DefaultTimeout
	}
	r, err := e.Start(ctx, &cc)
	if err != nil {
		return nil, err
	}
	// Run's ctx is the command's lifetime; Start's bounds the start only.
	stop := context.AfterFunc(ctx, func() { r.end(&r.canceled) })
	res, err := r.Wait()
	stop()
	if err == nil && res.Canceled {
		err = context.Cause(ctx)
	}
	return res, err
}

// Start starts c and returns at once. ctx bounds the start only, as a
// driver's Start does: cancelling it later does not touch the process,
// so a server started while handling a request outlives the request.
// The process lives until it exits, its Timeout passes, Running.Stop or
// Running.Shutdown is called or the world closes; each of these ends its
// whole process group.
func (e *Exec) Start(ctx context.Context, c *Cmd) (*Running, error) {
	w := e.w
	if w.isClosed() {
		return nil, ErrClosed
	}
	if w.Paused() {
		return nil, ErrPaused
	}
	ps, err := e.processSpec(c)
	if err != nil {
		return nil, err
	}
	maxOut := c.MaxOutputBytes
	if maxOut == 0 {
		maxOut = DefaultMaxOutputBytes
	}
	if maxOut < 0 {
		return nil, fmt.Errorf("%w: MaxOutputBytes %d is negative", ErrInvalidCmd, maxOut)
	}
	if c.Timeout < 0 {
		return nil, fmt.Errorf("%w: timeout %v is negative", ErrInvalidCmd, c.Timeout)
	}
	if c.Grace < 0 {
		return nil, fmt.Errorf("%w: grace %v is negative", ErrInvalidCmd, c.Grace)
	}
	if c.StdoutPipe && c.Stdout != nil {
		return nil, fmt.Errorf("%w: set Stdout or StdoutPipe, not both", ErrInvalidCmd)
	}
	if c.StdinPipe && c.Stdin != nil {
		return nil, fmt.Errorf("%w: set Stdin or StdinPipe, not both", ErrInvalidCmd)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	// The OOM kills counted before the start are not the command's.
	ooms, _ := w.inst.(sandbox.OOMCounter)
	var oomsBefore int64
	if ooms != nil {
		oomsBefore = ooms.OOMKills()
	}
	proc, err := w.inst.Start(ctx, ps)
	if err != nil {
		if w.isClosed() {
			return nil, ErrClosed
		}
		return nil, &StartError{Argv0: c.Argv[0], Code: startCode(err), Err: err}
	}
	grace := c.Grace
	if grace == 0 {
		grace = DefaultGrace
	}
	r := newRunning(w, proc, c, maxOut, grace)
	r.ooms, r.oomsBefore = ooms, oomsBefore
	if err := w.track(r); err != nil {
		// Closed while starting: nothing may outlive the world.
		r.kill()
		proc.Wait()
		return nil, err
	}
	r.start(c.Timeout)
	return r, nil
}

// processSpec validates c and builds what the driver starts.
func (e *Exec) processSpec(c *Cmd) (sandbox.ProcessSpec, error) {
	if c == nil || len(c.Argv) == 0 || c.Argv[0] == "" {
		return sandbox.ProcessSpec{}, fmt.Errorf("%w: empty argv; give the program and its arguments", ErrInvalidCmd)
	}
	for _, a := range c.Argv {
		if strings.IndexByte(a, 0) >= 0 {
			return sandbox.ProcessSpec{}, fmt.Errorf("%w: argument %q contains a NUL byte", ErrInvalidCmd, a)
		}
	}
	dir, err := e.dir(c.Dir)
	if err != nil {
		return sandbox.ProcessSpec{}, err
	}
	env, err := mergeEnv(e.w.spec.Env, e.w.proxyEnv, c.Env)
	if err != nil {
		return sandbox.ProcessSpec{}, err
	}
	var tty *WindowSize
	if c.TTY != nil {
		if !c.TTY.Valid() {
			return sandbox.ProcessSpec{}, fmt.Errorf("%w: terminal size %dx%d: rows and columns must be at least 1", ErrInvalidCmd, c.TTY.Rows, c.TTY.Cols)
		}
		size := *c.TTY
		tty = &size
	}
	return sandbox.ProcessSpec{
		Argv:  append([]string(nil), c.Argv...),
		Dir:   dir,
		Env:   env,
		Stdin: c.Stdin != nil || c.StdinPipe,
		TTY:   tty,
	}, nil
}

// dir checks that d names a directory inside the workspace (the kernel
// resolves it beneath the root) and returns its absolute path as the
// kernel reports it, so a symlinked directory is passed resolved.
func (e *Exec) dir(d string) (string, error) {
	fsys := e.w.FS
	fd, err := fsys.openat2(d, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return "", fmt.Errorf("%w: working directory %q must be a directory inside the workspace %s: %w", ErrInvalidCmd, d, fsys.Root(), err)
	}
	defer unix.Close(fd)
	rel, err := fsys.realRel(fd)
	if err != nil {
		return "", fmt.Errorf("%w: working directory %q: %w", ErrInvalidCmd, d, err)
	}
	if rel == "." {
		return fsys.Root(), nil
	}
	return fsys.Root() + "/" + rel, nil
}

// startCode maps a driver's start failure to a shell status: 127 when the
// program does not exist, 126 when it cannot be executed, 125 otherwise.
// Drivers return errors matching sandbox.ErrNotFound or
// sandbox.ErrNotExecutable.
func startCode(err error) int {
	switch {
	case errors.Is(err, sandbox.ErrNotFound), errors.Is(err, os.ErrNotExist):
		return 127
	case errors.Is(err, sandbox.ErrNotExecutable), errors.Is(err, syscall.EACCES), errors.Is(err, syscall.ENOEXEC),
		errors.Is(err, syscall.EISDIR), errors.Is(err, os.ErrPermission):
		return 126
	}
	return 125
}
