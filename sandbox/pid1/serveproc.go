package pid1

import (
	"bufio"
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dsh-dev/dsh/internal/pty"
	"github.com/hashicorp/yamux"
	"golang.org/x/sys/unix"
)

// serveProcess runs one process for the control stream ctl: it reads the
// start request, collects the data streams, starts the process, forwards
// its stdio and signals, and reports its exit.
func (s *server) serveProcess(ctl *yamux.Stream, id uint64) {
	defer ctl.Close()
	r := bufio.NewReader(ctl)
	var m message
	if err := readMessage(r, maxRequestLine, &m); err != nil || m.Start == nil {
		s.log.Warn("control stream without a start request", "id", id, "err", err)
		return
	}
	req := m.Start

	// The data streams: collect them all before anything can fail, so
	// every exit path closes them. Direct stdio has none.
	var stdin, stdout, stderr *yamux.Stream
	var err error
	switch {
	case req.Direct && s.stdio == nil:
		err = errors.New("direct stdio asked for, but this init has no stdio socket")
	case req.Direct && req.TTY != nil:
		err = errors.New("direct stdio asked for a process with a terminal")
	case !req.Direct:
		stdout, err = s.streams.take(streamKey{id, kindStdout}, streamWait, s.sess.CloseChan())
		if err == nil {
			stderr, err = s.streams.take(streamKey{id, kindStderr}, streamWait, s.sess.CloseChan())
		}
		if err == nil && req.Stdin {
			stdin, err = s.streams.take(streamKey{id, kindStdin}, streamWait, s.sess.CloseChan())
		}
	}
	closeStreams := func() {
		for _, st := range []*yamux.Stream{stdin, stdout, stderr} {
			if st != nil {
				st.Close()
			}
		}
	}
	if err != nil {
		closeStreams()
		writeMessage(ctl, &message{Error: &errorReply{Kind: "failed", Msg: err.Error()}})
		return
	}

	c, pipes, err := s.start(req)
	if err != nil {
		closeStreams()
		var se *StartError
		if errors.As(err, &se) {
			writeMessage(ctl, &message{Error: &errorReply{Kind: kindName(se.Kind), Msg: se.Msg}})
		} else {
			writeMessage(ctl, &message{Error: &errorReply{Kind: "failed", Msg: err.Error()}})
		}
		return
	}
	if req.Direct {
		if err := s.sendStdio(id, pipes); err != nil {
			// Nobody has its pipes: it must not run.
			unix.Kill(-c.pid, unix.SIGKILL)
			<-c.status
			s.endGroup(c.pid)
			writeMessage(ctl, &message{Error: &errorReply{Kind: "failed", Msg: err.Error()}})
			return
		}
	}
	s.log.Debug("started", "id", id, "pid", c.pid, "argv", req.Argv, "direct", req.Direct)
	writeMessage(ctl, &message{Started: &startedReply{Pid: c.pid}})

	var finished atomic.Bool // the record is done: the group is no longer ours to signal
	// outputs is done when every holder of the output pipes is gone: the
	// init read both pipes to their ends, or (direct stdio) the client
	// did and said so, or it gave up on the process.
	var outputs sync.WaitGroup
	outputs.Add(2)
	var ended [2]atomic.Bool // direct stdio: stdout, stderr reported
	endOutput := func(i int) {
		if ended[i].CompareAndSwap(false, true) {
			outputs.Done()
		}
	}
	if !req.Direct {
		go s.forwardOutput(ctl, stdout, pipes.stdout, "stdout", &outputs)
		go s.forwardOutput(ctl, stderr, pipes.stderr, "stderr", &outputs)
	}
	stdinDone := make(chan struct{})
	if stdin != nil {
		go func() {
			defer close(stdinDone)
			forwardStdin(ctl, stdin, pipes.stdin)
		}()
	} else {
		close(stdinDone)
	}
	go func() {
		// Signals from the client. The client closes the control stream
		// before the end only when it gave up on the process (a cancelled
		// Start): then the process must not outlive its handle.
		for {
			var m message
			if err := readMessage(r, maxReplyLine, &m); err != nil {
				if !finished.Load() {
					unix.Kill(-c.pid, unix.SIGKILL)
				}
				if req.Direct {
					// Nobody will report the outputs' ends.
					endOutput(0)
					endOutput(1)
				}
				return
			}
			if req.Direct {
				switch m.OutputEnd {
				case "stdout":
					endOutput(0)
				case "stderr":
					endOutput(1)
				}
			}
			if m.Resize != nil && pipes.tty != nil && m.Resize.Rows > 0 && m.Resize.Cols > 0 {
				// The kernel sends SIGWINCH to the terminal's foreground
				// process group.
				if err := pty.SetSize(pipes.tty, m.Resize.Rows, m.Resize.Cols); err != nil {
					s.log.Debug("resize", "pid", c.pid, "err", err)
				}
			}
			if m.Signal > 0 && m.Signal < 65 && !finished.Load() {
				// The group outlives its leader while a member lives,
				// and its id cannot be reused until the last member is
				// gone, so this never reaches a stranger.
				if err := unix.Kill(-c.pid, unix.Signal(m.Signal)); err != nil {
					s.log.Debug("signal", "pid", c.pid, "signal", m.Signal, "err", err)
				}
			}
		}
	}()

	status := <-c.status
	writeMessage(ctl, &message{Exit: &status})
	s.log.Debug("exited", "id", id, "pid", c.pid, "code", status.Code, "signal", status.Signal)
	// Until every holder of the output pipes is gone, the client may still
	// signal the group to end them.
	outputs.Wait()
	finished.Store(true)
	s.endGroup(c.pid)
	if stdin != nil {
		// End forwardStdin's wait for more input, and a write blocked on a
		// pipe that a leftover process holds open without reading.
		stdin.SetReadDeadline(time.Now())
		pipes.stdin.Close()
		<-stdinDone
		stdin.Close()
	}
	// The deferred ctl.Close tells the client nothing more will come.
}

// endGroup forgets the process group pgid: it is no longer the init's to
// kill at shutdown.
func (s *server) endGroup(pgid int) {
	s.mu.Lock()
	delete(s.groups, pgid)
	s.mu.Unlock()
}

// forwardOutput copies the process's output pipe to its stream until
// every writer of the pipe is gone, then reports the total on the control
// stream and closes the stream.
func (s *server) forwardOutput(ctl, st *yamux.Stream, pipe *os.File, name string, wg *sync.WaitGroup) {
	defer wg.Done()
	// Big reads make big yamux frames: each Write waits for the session's
	// send loop, so fewer, larger frames move output several times faster.
	// (pty.Reader hides os.File's WriteTo, which would copy in 32 KiB, and
	// ends a terminal's output, which reads EIO, with EOF.)
	n, err := io.CopyBuffer(st, pty.Reader(pipe), make([]byte, 256<<10))
	// Closing the read end makes later writers get EPIPE instead of
	// blocking on a full pipe nobody drains (only after a session loss).
	pipe.Close()
	if err != nil {
		s.log.Debug("forwarding output", "stream", name, "err", err)
	}
	writeMessage(ctl, &message{Output: &outputReply{Stream: name, N: n}})
	st.Close()
}

// forwardStdin copies the client's stdin stream to the process's stdin
// pipe. When nothing reads the pipe any more it tells the client and keeps
// draining the stream, so a writer on the client side never blocks on a
// window that will not open again.
func forwardStdin(ctl, st *yamux.Stream, pipe *os.File) {
	buf := make([]byte, 32<<10)
	for {
		n, rerr := st.Read(buf)
		if n > 0 && pipe != nil {
			if _, werr := pipe.Write(buf[:n]); werr != nil {
				pipe.Close()
				pipe = nil
				writeMessage(ctl, &message{StdinClosed: true})
			}
		}
		if rerr != nil {
			break
		}
	}
	if pipe != nil {
		pipe.Close()
	}
}
