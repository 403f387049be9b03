package execworld

import (
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	"github.com/dsh-dev/dsh/sandbox"
)

// Result is how a command ended and what it printed.
type Result struct {
	// Status is the exit code or the signal that killed the process.
	Status ExitStatus
	// TimedOut reports whether the Timeout ended the command.
	TimedOut bool
	// Canceled reports whether ctx or Running.Stop ended the command.
	Canceled bool
	// Lost reports that the driver lost the command (ErrInitLost): Status
	// is unknown.
	Lost bool
	// OOMKilled reports that the kernel's OOM killer ended the command:
	// it was killed by SIGKILL and the world's memory cgroup counted an
	// OOM kill while it ran. Only drivers that count OOM kills
	// (sandbox.OOMCounter) report it.
	OOMKilled bool
	// Stdout and Stderr are the exact tails of the two streams.
	Stdout, Stderr Output
	// Duration is the time from start to exit.
	Duration time.Duration
}

// ExitCode is the status a shell would report: LostCode when the driver
// lost the command, TimeoutCode after a timeout, 128+N after signal N,
// else the exit code.
func (r *Result) ExitCode() int {
	if r.Lost {
		return LostCode
	}
	if r.TimedOut {
		return TimeoutCode
	}
	return r.Status.ShellCode()
}

// Running is a started command. Its process group never outlives it: when
// the process exits, whatever is left of its group is killed.
type Running struct {
	w      *World
	proc   sandbox.Process
	out    *tail
	errOut *tail
	stdin  io.WriteCloser // non-nil with StdinPipe
	stdout io.Reader      // non-nil with StdoutPipe
	grace  time.Duration
	begin  time.Time
	// ooms counts the world's OOM kills (nil when the driver cannot);
	// oomsBefore is the count when the command started.
	ooms       sandbox.OOMCounter
	oomsBefore int64

	exited chan struct{} // closed when the process has exited
	done   chan struct{} // closed when res/err are final

	pumps sync.WaitGroup // output copiers (not the StdoutPipe reader)

	mu       sync.Mutex // guards the fields below
	timedOut bool
	canceled bool
	stops    []func() bool // timer and ctx watchers to disarm at exit

	termOnce sync.Once
	connOnce sync.Once
	conn     *conn
	res      *Result
	err      error
}

func newRunning(w *World, proc sandbox.Process, c *Cmd, maxOut int, grace time.Duration) *Running {
	r := &Running{
		w:      w,
		proc:   proc,
		out:    newTail(maxOut),
		errOut: newTail(maxOut),
		grace:  grace,
		begin:  time.Now(),
		exited: make(chan struct{}),
		done:   make(chan struct{}),
	}
	if c.StdinPipe {
		r.stdin = proc.Stdin()
	}
	if c.Stdin != nil {
		go func() {
			// EPIPE when the process exits without reading is expected.
			io.Copy(proc.Stdin(), c.Stdin)
			proc.Stdin().Close()
		}()
	}
	if c.StdoutPipe {
		r.stdout = io.TeeReader(proc.Stdout(), r.out)
	} else {
		r.pump(proc.Stdout(), r.out, c.Stdout)
	}
	r.pump(proc.Stderr(), r.errOut, c.Stderr)
	return r
}

// pump copies a stream into its tail and the caller's writer.
func (r *Running) pump(src io.Reader, t *tail, user io.Writer) {
	var dst io.Writer = t
	if user != nil {
		dst = io.MultiWriter(t, &dropOnError{w: user})
	}
	r.pumps.Add(1)
	go func() {
		defer r.pumps.Done()
		io.Copy(dst, src)
	}()
}

// dropOnError forwards to w until w fails once, then discards, so a
// broken caller writer never stalls the process or cuts the tail.
type dropOnError struct {
	w      io.Writer
	failed bool
}

func (d *dropOnError) Write(p []byte) (int, error) {
	if !d.failed {
		if _, err := d.w.Write(p); err != nil {
			d.failed = true
		}
	}
	return len(p), nil
}

func (r *Running) start(timeout time.Duration) {
	if timeout > 0 {
		t := time.AfterFunc(timeout, func() { r.end(&r.timedOut) })
		r.mu.Lock()
		r.stops = append(r.stops, t.Stop)
		r.mu.Unlock()
	}
	go r.wait()
}

// end terminates the command for the reason flag records, unless it
// already exited or another reason came first.
func (r *Running) end(flag *bool) {
	if r.markEnd(flag) {
		r.terminate()
	}
}

// markEnd records why the command is being ended, unless it already
// exited or another reason came first.
func (r *Running) markEnd(flag *bool) bool {
	select {
	case <-r.exited:
		return false
	default:
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.timedOut || r.canceled {
		return false
	}
	*flag = true
	return true
}

func (r *Running) wait() {
	st, err := r.proc.Wait()
	dur := time.Since(r.begin)
	close(r.exited)
	// Whatever the process left behind in its group (background jobs,
	// daemons that did not setsid) goes with it. The group may already be
	// empty; that error means nothing.
	r.proc.Signal(syscall.SIGKILL)

	r.mu.Lock()
	for _, stop := range r.stops {
		stop()
	}
	r.mu.Unlock()

	// Output may still be in the pipes; drain it, but not forever: a
	// process that escaped the group could hold a pipe open.
	drained := make(chan struct{})
	go func() { r.pumps.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(r.grace):
	}

	r.mu.Lock()
	r.res = &Result{
		Status:   st,
		TimedOut: r.timedOut,
		Canceled: r.canceled,
		Stdout:   r.out.snapshot(),
		Stderr:   r.errOut.snapshot(),
		Duration: dur,
	}
	if r.ooms != nil && st.Signal == syscall.SIGKILL && r.ooms.OOMKills() > r.oomsBefore {
		r.res.OOMKilled = true
	}
	if err != nil {
		r.res.Lost = true
		if r.w.isClosed() {
			r.err = fmt.Errorf("execworld: waiting for the process: %w", err)
		} else {
			r.err = fmt.Errorf("%w: %w", ErrInitLost, err)
		}
	}
	r.mu.Unlock()
	r.w.untrack(r)
	close(r.done)
}

// terminate ends the process group: SIGTERM, then SIGKILL after the grace
// unless the process exited first. It is idempotent.
func (r *Running) terminate() {
	r.termOnce.Do(func() {
		r.proc.Signal(syscall.SIGTERM)
		go func() {
			select {
			case <-r.exited:
			case <-time.After(r.grace):
				r.proc.Signal(syscall.SIGKILL)
			}
		}()
	})
}

// kill ends the process group at once (the world is closing).
func (r *Running) kill() { r.proc.Signal(syscall.SIGKILL) }

// Stdin is the process's stdin pipe (Cmd.StdinPipe), or nil.
func (r *Running) Stdin() io.WriteCloser { return r.stdin }

// Stdout is the process's stdout (Cmd.StdoutPipe), or nil. Bytes read
// from it are also kept in the tail.
func (r *Running) Stdout() io.Reader { return r.stdout }

// Signal sends sig to the process's whole group.
func (r *Running) Signal(sig syscall.Signal) error { return r.proc.Signal(sig) }

// Resize changes the size of the command's terminal (Cmd.TTY); the
// program gets SIGWINCH. Without a terminal it returns ErrNoTTY.
func (r *Running) Resize(size WindowSize) error { return r.proc.Resize(size) }

// Stop ends the command as a cancel does: SIGTERM to its group, the grace,
// then SIGKILL. Its Result reports Canceled. It returns at once; Wait for
// the Result.
func (r *Running) Stop() { r.end(&r.canceled) }

// Done is closed when the Result is ready.
func (r *Running) Done() <-chan struct{} { return r.done }

// Tail returns what has been kept of stdout and stderr so far.
func (r *Running) Tail() (stdout, stderr Output) {
	return r.out.snapshot(), r.errOut.snapshot()
}

// Wait waits for the command to end and returns its Result. It may be
// called more than once. An error means the driver lost the process (the
// Result then has what was collected and reports Lost; the error wraps
// ErrInitLost unless the world was closed).
func (r *Running) Wait() (*Result, error) {
	<-r.done
	return r.res, r.err
}
