package bridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// State is where a server's connection stands.
type State int

const (
	// Idle: not started (a Lazy server before its first use).
	Idle State = iota
	// Connecting: the first connection is being made.
	Connecting
	// Ready: connected, with a complete catalog.
	Ready
	// Reconnecting: the connection was lost; the supervisor is trying
	// again within its budget, and the last good tools stay listed.
	Reconnecting
	// Failed: given up (budget spent, reconnect disabled, or the old
	// process would not stop); the server's tools are gone. Reason says
	// why.
	Failed
	// Closed: the Bridge was closed.
	Closed
)

func (s State) String() string {
	switch s {
	case Idle:
		return "idle"
	case Connecting:
		return "connecting"
	case Ready:
		return "ready"
	case Reconnecting:
		return "reconnecting"
	case Failed:
		return "failed"
	case Closed:
		return "closed"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// server is one upstream server and its supervisor.
type server struct {
	b   *Bridge
	cfg Server
	rc  Reconnect

	ctx    context.Context // the supervisor's lifetime; cancelled by close
	cancel context.CancelFunc
	once   sync.Once     // starts the supervisor
	done   chan struct{} // closed when the supervisor has returned

	syncMu sync.Mutex // serialises syncs

	mu       sync.Mutex // guards the fields below
	state    State
	reason   string
	attempts int // reconnect attempts of the current outage
	epoch    uint64
	sess     *mcp.ClientSession
	link     *Link
	lastLink *Link         // the link stopped last, for diagnose
	changed  chan struct{} // closed and replaced at every state change
	started  bool
	catalog  catalog
	progress map[any]func(*mcp.ProgressNotificationParams)
	// cachePath is the catalog cache file ("" for none); cached is the
	// catalog read from it, until the first live sync compares it.
	cachePath string
	cached    *cachedCatalog
	drift     []string // how the live catalog differed from the cached one
}

func newServer(b *Bridge, cfg Server) *server {
	ctx, cancel := context.WithCancel(context.Background())
	return &server{
		b: b, cfg: cfg, rc: cfg.Reconnect.withDefaults(),
		ctx: ctx, cancel: cancel, done: make(chan struct{}),
		changed:  make(chan struct{}),
		progress: map[any]func(*mcp.ProgressNotificationParams){},
	}
}

// ensureStarted starts the supervisor once.
func (s *server) ensureStarted() {
	s.once.Do(func() {
		s.mu.Lock()
		if s.state == Closed {
			s.mu.Unlock()
			close(s.done)
			return
		}
		s.started = true
		s.mu.Unlock()
		s.setState(Connecting, "")
		go s.run()
	})
}

func (s *server) setState(st State, reason string) {
	s.mu.Lock()
	if s.state == Closed {
		s.mu.Unlock()
		return
	}
	same := s.state == st && s.reason == reason
	s.state, s.reason = st, reason
	if !same {
		close(s.changed)
		s.changed = make(chan struct{})
	}
	s.mu.Unlock()
	if !same {
		s.b.notify(Event{Server: s.cfg.Name, Kind: StateChanged})
	}
}

// waitReady waits until the server is Ready and returns its session, or
// until it has failed or ctx ends.
func (s *server) waitReady(ctx context.Context) (*mcp.ClientSession, error) {
	for {
		s.mu.Lock()
		st, reason, sess, ch := s.state, s.reason, s.sess, s.changed
		s.mu.Unlock()
		switch st {
		case Ready:
			if sess != nil {
				return sess, nil
			}
		case Failed:
			return nil, fmt.Errorf("%w: MCP server %s failed: %s", ErrUnavailable, s.cfg.Name, reason)
		case Closed:
			return nil, ErrClosed
		case Idle:
			return nil, fmt.Errorf("%w: MCP server %s is not started", ErrUnavailable, s.cfg.Name)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			msg := "still connecting"
			if st == Reconnecting {
				msg = "reconnecting after: " + reason
			}
			return nil, fmt.Errorf("%w: MCP server %s is not ready (%s): %w", ErrUnavailable, s.cfg.Name, msg, context.Cause(ctx))
		}
	}
}

// waitFirst waits until the first connection attempt has ended: nil
// when the server is ready, else why it is not.
func (s *server) waitFirst(ctx context.Context) error {
	for {
		s.mu.Lock()
		st, reason, ch := s.state, s.reason, s.changed
		s.mu.Unlock()
		switch {
		case st == Ready:
			return nil
		case st == Connecting && reason != "":
			return fmt.Errorf("%w: MCP server %s: %s", ErrUnavailable, s.cfg.Name, reason)
		case st != Connecting:
			_, err := s.waitReady(ctx)
			return err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("%w: MCP server %s is not ready: %w", ErrUnavailable, s.cfg.Name, context.Cause(ctx))
		}
	}
}

// markLost takes sess out of use after a call saw its connection
// closed, so that the next call waits for the reconnect instead of
// using it; the supervisor notices the loss itself.
func (s *server) markLost(sess *mcp.ClientSession, why string) {
	s.mu.Lock()
	lost := s.sess == sess && s.state == Ready
	if lost {
		s.sess = nil
	}
	s.mu.Unlock()
	if lost {
		s.setState(Reconnecting, why)
	}
}

// run is the supervisor: connect, wait for the connection to end,
// reconnect within the budget.
func (s *server) run() {
	defer close(s.done)
	attempt := 0 // reconnect attempts of this outage; 0 is the first start
	everUp := false
	for {
		if attempt > 0 {
			select {
			case <-time.After(s.rc.Delay(attempt)):
			case <-s.ctx.Done():
				return
			}
		}
		s.mu.Lock()
		s.attempts = attempt
		s.mu.Unlock()
		sess, err := s.connect()
		if s.ctx.Err() != nil {
			if sess != nil {
				s.endSession(sess)
			}
			s.stopLink()
			return
		}
		var why string
		if err != nil {
			why = err.Error()
			// Said before the process is stopped, which may take its
			// grace: a caller waiting for the first attempt hears now.
			if everUp {
				s.setState(Reconnecting, why)
			} else {
				s.setState(Connecting, why)
			}
			if !s.stopLink() {
				return
			}
		} else {
			everUp = true
			up := time.Now()
			s.setState(Ready, "")
			werr := sess.Wait()
			if s.ctx.Err() != nil {
				return
			}
			why = "connection lost"
			if werr != nil && !errors.Is(werr, io.EOF) {
				why += ": " + werr.Error()
			}
			why += s.diagnose()
			s.b.log.Warn("MCP server connection lost", "server", s.cfg.Name, "reason", why)
			s.setState(Reconnecting, why)
			s.endSession(sess)
			if !s.stopLink() {
				return
			}
			if time.Since(up) >= s.rc.MaxDelay {
				attempt = 0 // a stable connection resets the budget
			}
		}
		if s.cfg.Reconnect.Disabled {
			s.fail("reconnect is disabled; " + why)
			return
		}
		if attempt >= s.rc.MaxAttempts {
			s.fail(fmt.Sprintf("gave up after %d reconnect attempts; last: %s", attempt, why))
			return
		}
		attempt++
		if everUp {
			s.setState(Reconnecting, why)
		} else {
			s.setState(Connecting, why)
		}
	}
}

// fail gives the server up: its tools go, and Reason says why.
func (s *server) fail(reason string) {
	s.b.log.Error("MCP server given up", "server", s.cfg.Name, "reason", reason)
	s.b.uninstall(s)
	s.mu.Lock()
	s.catalog = catalog{}
	s.mu.Unlock()
	s.setState(Failed, reason)
}

// connect makes one connection: start, handshake, first sync, all
// within the startup timeout.
func (s *server) connect() (*mcp.ClientSession, error) {
	timeout := s.cfg.startupTimeout()
	ctx, cancel := context.WithTimeoutCause(s.ctx, timeout, fmt.Errorf("no answer within the startup timeout of %v", timeout))
	defer cancel()
	link, err := s.cfg.Upstream.Start(ctx)
	if err != nil {
		return nil, fmt.Errorf("starting: %w", err)
	}
	s.mu.Lock()
	s.link = link
	s.epoch++
	epoch := s.epoch
	s.mu.Unlock()

	client := mcp.NewClient(s.b.impl, &mcp.ClientOptions{
		Logger:       nil,
		Capabilities: &mcp.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			go s.resync(epoch, ToolsChanged)
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			go s.resync(epoch, ResourcesChanged)
		},
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
			go s.resync(epoch, PromptsChanged)
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			s.onProgress(epoch, req.Params)
		},
	})
	var opts *mcp.ClientSessionOptions
	if v := s.cfg.protocolVersion(); v != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: v}
	}
	sess, err := connectSession(ctx, client, link.Transport, opts)
	if err != nil {
		return nil, fmt.Errorf("MCP handshake: %w%s", causeOr(ctx, err), s.diagnose())
	}
	s.mu.Lock()
	s.sess = sess
	s.mu.Unlock()
	if err := s.sync(ctx, sess, epoch, allKinds); err != nil {
		s.endSession(sess)
		return nil, fmt.Errorf("%w%s", causeOr(ctx, err), s.diagnose())
	}
	return sess, nil
}

// connectSession is client.Connect, bounded by ctx even where the
// go-sdk waits on something ctx does not reach.
func connectSession(ctx context.Context, c *mcp.Client, t mcp.Transport, opts *mcp.ClientSessionOptions) (*mcp.ClientSession, error) {
	type res struct {
		s   *mcp.ClientSession
		err error
	}
	ch := make(chan res, 1)
	go func() {
		s, err := c.Connect(ctx, t, opts)
		ch <- res{s, err}
	}()
	select {
	case r := <-ch:
		return r.s, r.err
	case <-ctx.Done():
		// Connect returns once the link is stopped; its session, if any,
		// is closed then.
		go func() {
			if r := <-ch; r.s != nil {
				r.s.Close()
			}
		}()
		return nil, context.Cause(ctx)
	}
}

// causeOr is ctx's cause when ctx ended (a timeout says which), else err.
func causeOr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w (%v)", context.Cause(ctx), err)
	}
	return err
}

// diagnose is the link's own account of its process, as a suffix.
func (s *server) diagnose() string {
	s.mu.Lock()
	l := s.link
	if l == nil {
		l = s.lastLink
	}
	s.mu.Unlock()
	if l == nil || l.Diagnose == nil {
		return ""
	}
	if d := l.Diagnose(); d != "" {
		return "; " + d
	}
	return ""
}

// endSession closes sess without waiting for calls in flight: the
// connection is gone or going.
func (s *server) endSession(sess *mcp.ClientSession) {
	s.mu.Lock()
	if s.sess == sess {
		s.sess = nil
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { sess.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(StopTimeout):
	}
}

// stopLink stops the current link's process. It reports false (and
// fails the server) when the process did not end within StopTimeout:
// starting another then could run two at once.
func (s *server) stopLink() bool {
	s.mu.Lock()
	l := s.link
	s.link = nil
	if l != nil {
		s.lastLink = l
	}
	s.mu.Unlock()
	if l == nil || l.Stop == nil {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), StopTimeout)
	defer cancel()
	if err := l.Stop(ctx); err != nil && ctx.Err() != nil {
		s.fail(fmt.Sprintf("its process did not end within %v of being stopped (%v); not starting another, so that two never run at once", StopTimeout, err))
		return false
	}
	return true
}

// close stops the supervisor, the session and the process, and closes
// the upstream if it is an io.Closer.
func (s *server) close() error {
	s.mu.Lock()
	started := s.started
	s.state = Closed
	close(s.changed)
	s.changed = make(chan struct{})
	sess := s.sess
	s.mu.Unlock()
	s.cancel()
	if sess != nil {
		// Calls in flight end with the connection: Close waits for them.
		s.stopLink()
		s.endSession(sess)
	}
	if started {
		<-s.done
	}
	s.stopLink()
	s.b.uninstall(s)
	if c, ok := s.cfg.Upstream.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
