package pid1

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/yamux"
	"golang.org/x/sys/unix"
)

// ServeOptions configures Serve. The zero value works.
type ServeOptions struct {
	// Logger receives the init's diagnostics. If nil, they are discarded.
	Logger *slog.Logger
	// Stdio, if set, is the init's end of the stdio socket (direct.go):
	// processes the client asks direct stdio for get their pipes passed
	// to it there. Serve uses it only to send; it does not close it.
	Stdio *net.UnixConn

	oom *oomScore // Main's: processes start at oom_score_adj 0
	// forker forks the processes in their own cgroup (Config.ForkGroup);
	// nil forks on the requesting thread. Serve stops it.
	forker *forker
}

// How long the streams of one process may take to arrive after its start
// request, and a stream's header after the stream. Both are sent together
// by the client, so only a broken client hits these.
const (
	streamWait    = 30 * time.Second
	headerTimeout = 30 * time.Second
)

// shutdownReapTimeout bounds how long Serve waits, after SIGKILLing
// everything, for the kernel to let the victims be reaped (a process in
// uninterruptible sleep dies only when the sleep ends).
const shutdownReapTimeout = 10 * time.Second

// Serve runs the init's side of the protocol over conn until conn closes
// or fails. Then it SIGKILLs everything it started and everything it can
// reach (every descendant; as PID 1, kill(-1)), reaps the victims and
// returns: nil when the peer closed the connection, else the transport's
// error.
//
// Serve owns the wait4 calls for the children of this process: nothing
// else in the process may start and wait for children while it runs (no
// os/exec). When the process is PID 1 or a child subreaper, Serve reaps
// every child, orphans included; otherwise only the children it started.
func Serve(conn io.ReadWriteCloser, opts *ServeOptions) error {
	if opts == nil {
		opts = &ServeOptions{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	sess, err := yamux.Server(conn, sessionConfig())
	if err != nil {
		conn.Close()
		return fmt.Errorf("pid1: starting session: %w", err)
	}
	pid1 := os.Getpid() == 1
	s := &server{
		sess:     sess,
		log:      log,
		pid1:     pid1,
		reapAll:  pid1 || isSubreaper(),
		streams:  rendezvous{m: make(map[streamKey]chan *yamux.Stream)},
		children: make(map[int]*child),
		groups:   make(map[int]struct{}),
		oom:      opts.oom,
		stdio:    opts.Stdio,
	}
	if s.forker = opts.forker; s.forker != nil {
		defer close(s.forker.reqs)
	}
	return s.run()
}

type server struct {
	sess    *yamux.Session
	log     *slog.Logger
	pid1    bool // PID 1 of a pid namespace: kill(-1) reaches everything
	reapAll bool // PID 1 or a subreaper: every child, orphans too, is ours to reap
	streams rendezvous
	stdio   *net.UnixConn // nil: no direct stdio
	forker  *forker       // nil: fork on the requesting thread

	// mu guards the fields below. It is held across fork, so the reaper
	// cannot reap a new child before it is registered and mistake it for
	// an orphan.
	mu       sync.Mutex
	children map[int]*child   // started by us and not yet reaped, by pid
	groups   map[int]struct{} // process groups that may still have members
	closing  bool             // no new processes: the init is shutting down
	oom      *oomScore        // nil: leave the score alone
}

// child is a process the init started.
type child struct {
	pid    int
	status chan exitReply // receives the status once, when reaped
}

func (s *server) run() error {
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGCHLD)
	defer signal.Stop(sigc)
	stop := make(chan struct{})
	reaperDone := make(chan struct{})
	go func() {
		defer close(reaperDone)
		s.reap() // children that exited before Notify took effect
		for {
			select {
			case <-sigc:
				s.reap()
			case <-stop:
				return
			}
		}
	}()

	var err error
	for {
		st, aerr := s.sess.AcceptStream()
		if aerr != nil {
			err = aerr
			break
		}
		go s.handleStream(st)
	}
	s.log.Debug("control connection ended; killing every process", "err", err)
	s.shutdown()
	close(stop)
	<-reaperDone
	s.sess.Close()
	if peerClosed(err) {
		return nil
	}
	return fmt.Errorf("pid1: control connection: %w", err)
}

// handleStream reads a new stream's header and routes it: a control
// stream starts a process; a data stream waits for its control stream.
func (s *server) handleStream(st *yamux.Stream) {
	st.SetReadDeadline(time.Now().Add(headerTimeout))
	hdr := make([]byte, headerSize)
	if _, err := io.ReadFull(st, hdr); err != nil {
		s.log.Warn("stream without a header", "err", err)
		st.Close()
		return
	}
	st.SetReadDeadline(time.Time{})
	kind, id := decodeHeader(hdr)
	switch kind {
	case kindControl:
		s.serveProcess(st, id)
	case kindStdin, kindStdout, kindStderr:
		s.streams.put(streamKey{id, kind}, st)
	default:
		s.log.Warn("stream of unknown kind", "kind", kind)
		st.Close()
	}
}

// shutdown kills every process and reaps them, waiting at most
// shutdownReapTimeout.
func (s *server) shutdown() {
	s.mu.Lock()
	s.closing = true
	for pgid := range s.groups {
		unix.Kill(-pgid, unix.SIGKILL)
	}
	s.mu.Unlock()
	deadline := time.Now().Add(shutdownReapTimeout)
	for {
		if s.pid1 {
			// Every process of the namespace but us; the kernel never
			// lets kill(-1) reach PID 1 itself. Only ever called as PID 1:
			// elsewhere kill(-1) would reach the whole machine.
			unix.Kill(-1, unix.SIGKILL)
		}
		if s.reapAll {
			// Descendants that left our process groups were reparented
			// to us when their parents died: kill our children until
			// none is left.
			killChildren()
		}
		if !s.reap() {
			return
		}
		if time.Now().After(deadline) {
			s.log.Warn("processes survived SIGKILL; giving up on reaping them")
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// rendezvous matches data streams with their control stream, whichever
// arrives first.
type rendezvous struct {
	mu sync.Mutex
	m  map[streamKey]chan *yamux.Stream
}

type streamKey struct {
	id   uint64
	kind byte
}

func (r *rendezvous) slot(k streamKey) chan *yamux.Stream {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch := r.m[k]
	if ch == nil {
		ch = make(chan *yamux.Stream, 1)
		r.m[k] = ch
	}
	return ch
}

func (r *rendezvous) put(k streamKey, st *yamux.Stream) {
	select {
	case r.slot(k) <- st:
	default: // a duplicate: the client is broken
		st.Close()
	}
}

// take waits for the stream k until timeout or done.
func (r *rendezvous) take(k streamKey, timeout time.Duration, done <-chan struct{}) (*yamux.Stream, error) {
	ch := r.slot(k)
	defer func() {
		r.mu.Lock()
		delete(r.m, k)
		r.mu.Unlock()
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case st := <-ch:
		return st, nil
	case <-t.C:
		return nil, fmt.Errorf("stream %q of process %d never arrived", k.kind, k.id)
	case <-done:
		return nil, yamux.ErrSessionShutdown
	}
}

// peerClosed reports whether err is how a session ends when the peer
// closes the connection: EOF on a read, or EPIPE/ECONNRESET on a write
// that raced with the close.
func peerClosed(err error) bool {
	return err == nil || errors.Is(err, io.EOF) || errors.Is(err, yamux.ErrSessionShutdown) ||
		errors.Is(err, os.ErrClosed) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}
