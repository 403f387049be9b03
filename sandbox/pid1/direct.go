package pid1

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"

	"github.com/dsh-dev/dsh/sandbox"
	"golang.org/x/sys/unix"
)

// Direct stdio.
//
// A driver whose init runs on the same host as dsh (native) connects the
// two with a second channel besides the session: the stdio socket, one
// end of a unix SOCK_SEQPACKET socket pair, which the init holds
// close-on-exec (no process of the world inherits it, and the init is not
// dumpable, so none can reopen it) and the client the other end of
// ([NewDirectClient], [ServeOptions.Stdio]). A process started without a
// terminal then gets no data streams: the init makes its pipes as usual,
// starts it, sends the parent ends — stdout, stderr and, with
// ProcessSpec.Stdin, stdin — in one message naming the process id
// (8 bytes, big endian; SCM_RIGHTS, sandbox.SendFDs), closes its own
// copies, and only then answers "started". The client reads and writes
// those pipes itself: the exact bytes, with no hop through the init. The
// control stream stays as it is — start, signals, the exit status — and
// the client reports there each output it read to its end ("outputEnd"),
// so the init knows, as with relayed pipes, when every holder of the
// output pipes is gone and the process group is no longer its to signal.
//
// The init is the untrusted side: the client takes from it only the
// number of descriptors the process needs, each one a pipe (fstat), for
// an id it is waiting for; anything else is closed.

// stdioIDSize is the size of a stdio message: the process id.
const stdioIDSize = 8

// directFiles is what the stdio socket brought for one process: its
// stdout, stderr and (if asked) stdin, or why not.
type directFiles struct {
	files []*os.File
	err   error
}

// stdioReceiver receives the descriptors on the client's end of the
// stdio socket and hands them to the process whose id they carry.
type stdioReceiver struct {
	conn *net.UnixConn

	mu      sync.Mutex
	pending map[uint64]*pendingStdio
	done    chan struct{} // closed when the socket ended; err says why
	err     error
}

type pendingStdio struct {
	n  int // descriptors expected
	ch chan directFiles
}

func newStdioReceiver(conn *net.UnixConn) *stdioReceiver {
	r := &stdioReceiver{conn: conn, pending: make(map[uint64]*pendingStdio), done: make(chan struct{})}
	go r.run()
	return r
}

// expect registers id, whose start request asks for n descriptors. It
// must come before the request is sent; forget undoes it.
func (r *stdioReceiver) expect(id uint64, n int) *pendingStdio {
	ps := &pendingStdio{n: n, ch: make(chan directFiles, 1)}
	r.mu.Lock()
	r.pending[id] = ps
	r.mu.Unlock()
	return ps
}

// take waits for the descriptors ps expects until they come, the socket
// ends or abandon is closed.
func (r *stdioReceiver) take(ps *pendingStdio, abandon <-chan struct{}) ([]*os.File, error) {
	select {
	case d := <-ps.ch:
		return d.files, d.err
	case <-r.done:
		// Delivered just before the end?
		select {
		case d := <-ps.ch:
			return d.files, d.err
		default:
		}
		return nil, r.err
	case <-abandon:
		return nil, errors.New("start abandoned")
	}
}

// forget drops id, closing whatever arrived for it and was not taken.
func (r *stdioReceiver) forget(id uint64) {
	r.mu.Lock()
	ps := r.pending[id]
	delete(r.pending, id)
	r.mu.Unlock()
	if ps == nil {
		return
	}
	select {
	case d := <-ps.ch:
		closeFiles(d.files)
	default:
	}
}

func (r *stdioReceiver) run() {
	buf := make([]byte, stdioIDSize+1)
	var err error
	for {
		var n int
		var fds []int
		n, fds, err = sandbox.ReceiveFDs(r.conn, buf, 3)
		if err != nil {
			break
		}
		if n != stdioIDSize {
			sandbox.CloseFDs(fds)
			err = fmt.Errorf("a %d-byte message, want %d", n, stdioIDSize)
			break
		}
		id := binary.BigEndian.Uint64(buf)
		// Under the lock, so forget either sees what was delivered or
		// keeps it from being delivered.
		r.mu.Lock()
		if ps := r.pending[id]; ps == nil {
			// A start abandoned meanwhile (or a broken init): nobody
			// takes these.
			sandbox.CloseFDs(fds)
		} else {
			select {
			case ps.ch <- pipeFiles(fds, ps.n):
			default: // a second message for one id
				sandbox.CloseFDs(fds)
			}
		}
		r.mu.Unlock()
	}
	r.mu.Lock()
	r.err = fmt.Errorf("%w: stdio socket: %v", ErrConnLost, err)
	r.mu.Unlock()
	close(r.done)
}

// pipeFiles checks that fds are n pipes and makes them pollable files,
// in the order stdout, stderr, stdin. Otherwise it closes them all.
func pipeFiles(fds []int, n int) directFiles {
	fail := func(format string, args ...any) directFiles {
		sandbox.CloseFDs(fds)
		return directFiles{err: fmt.Errorf("%w: stdio socket: "+format, append([]any{ErrConnLost}, args...)...)}
	}
	if len(fds) != n {
		return fail("the init sent %d descriptors, want %d", len(fds), n)
	}
	for _, fd := range fds {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return fail("fstat: %v", err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFIFO {
			return fail("the init sent a descriptor that is not a pipe (mode %#o)", st.Mode)
		}
		// Non-blocking, so Go's poller serves it and Close interrupts a
		// pending Read or Write.
		if err := unix.SetNonblock(fd, true); err != nil {
			return fail("%v", err)
		}
	}
	names := []string{"stdout", "stderr", "stdin"}
	files := make([]*os.File, n)
	for i, fd := range fds {
		files[i] = os.NewFile(uintptr(fd), names[i])
	}
	return directFiles{files: files}
}

func closeFiles(files []*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
}

// sendStdio sends the parent ends of a started process's pipes to the
// client and closes the init's copies, so the client alone holds them.
func (s *server) sendStdio(id uint64, p *childPipes) error {
	files := []*os.File{p.stdout, p.stderr}
	if p.stdin != nil {
		files = append(files, p.stdin)
	}
	fds := make([]int, len(files))
	for i, f := range files {
		// Plain descriptors (openPipes): the client makes them
		// non-blocking for its own poller.
		fds[i] = int(f.Fd())
	}
	msg := binary.BigEndian.AppendUint64(nil, id)
	err := sandbox.SendFDs(s.stdio, msg, fds...)
	closeFiles(files)
	p.stdin, p.stdout, p.stderr = nil, nil, nil
	if err != nil {
		return fmt.Errorf("passing stdio to dsh: %w", err)
	}
	return nil
}

// seeEnd tells the init, once, that every holder of the output pipe's
// write end is gone (the data may still be unread).
func (r *outputReader) seeEnd() {
	if r.endSeen.CompareAndSwap(false, true) {
		go r.p.control(&message{OutputEnd: r.name}, "reporting the end of the output of")
	}
	r.stopWatch()
}

// watchEnd waits, once the process has exited, for the output pipe to
// hang up (every holder of its write end gone) without reading it: the
// init keeps signalling the group until then, as it does for relayed
// pipes it reads itself, even if nobody reads this output. It watches a
// duplicate of the pipe, so Read is not held up; each write wakes it at
// most once, and after the exit few come.
func (r *outputReader) watchEnd() {
	if r.endSeen.Load() {
		return
	}
	rc, err := r.f.SyscallConn()
	if err != nil {
		return
	}
	dup := -1
	if rc.Control(func(fd uintptr) { dup, _ = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) }) != nil || dup < 0 {
		return // closed: the end was seen meanwhile, or the stream ended
	}
	w := os.NewFile(uintptr(dup), r.name+" (hangup)")
	r.watchMu.Lock()
	if r.stopped {
		r.watchMu.Unlock()
		w.Close()
		return
	}
	r.watch = w
	r.watchMu.Unlock()
	go func() {
		wrc, err := w.SyscallConn()
		if err != nil {
			return
		}
		if wrc.Read(func(fd uintptr) bool { return hungUp(int(fd)) }) == nil {
			r.seeEnd()
		}
	}()
}

// stopWatch ends watchEnd.
func (r *outputReader) stopWatch() {
	r.watchMu.Lock()
	r.stopped = true
	w := r.watch
	r.watch = nil
	r.watchMu.Unlock()
	if w != nil {
		w.Close()
	}
}

// hungUp reports whether the pipe fd has no writer left.
func hungUp(fd int) bool {
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(pfd, 0)
	return err == nil && n == 1 && pfd[0].Revents&(unix.POLLHUP|unix.POLLERR) != 0
}

// isPipeEnd reports whether err is the EPIPE of a write to a pipe
// nothing reads any more.
func isPipeEnd(err error) bool { return errors.Is(err, syscall.EPIPE) }
