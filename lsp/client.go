package lsp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/dsh-dev/dsh/execworld"
)

// Options configure a Client. The zero value works.
type Options struct {
	// Servers are the language servers, validated together: an invalid
	// server or an extension claimed twice fails New and publishes no
	// route. If nil, Presets().
	Servers []ServerConfig
	// MaxFailures is how many failures in a row (failed starts, crashes)
	// a server may have before it is reported failed without another
	// start until BackoffMax has passed. If zero, 3.
	MaxFailures int
	// BackoffInitial is the wait before restarting a server after its
	// first failure; it doubles with each further failure up to
	// BackoffMax. If zero, 500ms; BackoffMax if zero, 30s.
	BackoffInitial, BackoffMax time.Duration
	// Logger receives operational notes. If nil, they are discarded.
	Logger *slog.Logger
}

// Client asks language servers running in one world. It is safe for
// concurrent use; queries on one workspace run one at a time, queries
// on different workspaces in parallel.
type Client struct {
	w       *execworld.World
	routes  map[string]*ServerConfig
	servers []*ServerConfig // in configuration order
	maxFail int
	backoff [2]time.Duration
	log     *slog.Logger

	mu     sync.Mutex // guards the fields below
	closed bool
	slots  map[slotKey]*slot
	queues map[string]chan struct{} // per canonical workspace, capacity 1
}

type slotKey struct{ server, workspace string }

// slot is the place of one server for one workspace: its process, if
// any, and its record of failures.
type slot struct {
	cfg    *ServerConfig
	ws     *workspace
	mu     sync.Mutex // guards the fields below
	inst   *instance
	state  State
	fails  int
	lastAt time.Time
	why    string
}

// New returns a Client for the servers of opts, which run in w.
func New(w *execworld.World, opts *Options) (*Client, error) {
	if opts == nil {
		opts = &Options{}
	}
	servers := opts.Servers
	if servers == nil {
		servers = Presets()
	}
	r, err := routes(servers)
	if err != nil {
		return nil, err
	}
	c := &Client{
		w:       w,
		routes:  r,
		maxFail: opts.MaxFailures,
		backoff: [2]time.Duration{opts.BackoffInitial, opts.BackoffMax},
		log:     opts.Logger,
		slots:   map[slotKey]*slot{},
		queues:  map[string]chan struct{}{},
	}
	if c.maxFail <= 0 {
		c.maxFail = 3
	}
	if c.backoff[0] <= 0 {
		c.backoff[0] = 500 * time.Millisecond
	}
	if c.backoff[1] <= 0 {
		c.backoff[1] = 30 * time.Second
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	seen := map[string]bool{}
	for i := range servers {
		s := r[sortedKeys(servers[i].Extensions)[0]]
		if !seen[s.ID] {
			seen[s.ID] = true
			c.servers = append(c.servers, s)
		}
	}
	return c, nil
}

// Query is one question about the symbol at a position.
type Query struct {
	Op Operation
	// File is absolute, or relative to Workspace.
	File string
	// Line and Column are 1-based; Column counts characters (code
	// points) of the line, as editors show them.
	Line, Column int
	// Workspace is the directory the server indexes: absolute, or
	// relative to the world's workspace. If empty, the world's workspace.
	Workspace string
}

// Location is a place in a file, 1-based, columns in code points.
type Location struct {
	// Path is the file's host path: inside the world's workspace or a
	// mount the world shares; else the path inside the world.
	Path string
	// Rel is Path relative to the query's workspace, or "" when the file
	// lies outside it.
	Rel                              string
	Line, Column, EndLine, EndColumn int
	// UTF16 reports that the file could not be read through the
	// world's FS (it lies outside the workspace), so the columns are the
	// server's UTF-16 ones (1-based), not code points.
	UTF16 bool
}

// Kind tells a Result's shape.
type Kind string

const (
	KindLocations Kind = "locations"
	KindHover     Kind = "hover"
)

// Result is the answer to a Query.
type Result struct {
	Kind Kind
	// Workspace is the canonical host path of the query's workspace.
	Workspace string
	Server    string
	Locations []Location
	// Hover is the hover text; "" with HasHover false is no hover.
	Hover    string
	HasHover bool
}

// Query answers q: a result, an LSP_INDEXING error when the server is
// still indexing past its cap, or another *Error.
func (c *Client) Query(ctx context.Context, q Query) (*Result, error) {
	if _, ok := opNames[q.Op]; !ok {
		return nil, errorf(CodeUnsupportedOperation, nil, "operation %d is not one of goToDefinition, findReferences, goToImplementation, hover", int(q.Op))
	}
	if q.Line < 1 || q.Column < 1 {
		return nil, errorf(CodeInvalidPosition, nil, "line %d, column %d: both are 1-based and must be at least 1", q.Line, q.Column)
	}
	ext := Route(q.File)
	cfg, ok := c.routes[ext]
	if !ok {
		if ext == "" {
			return nil, errorf(CodeUnavailable, nil, "no language server for %s: it has no file extension to route by", q.File)
		}
		return nil, errorf(CodeUnavailable, nil, "no language server handles %s files (%s); configure one in lsp.servers", ext, q.File)
	}
	ws, err := c.workspace(q.Workspace)
	if err != nil {
		return nil, err
	}
	release, err := c.enqueue(ctx, ws.host)
	if err != nil {
		return nil, err
	}
	defer release()
	// The source is read when the query's turn comes, before any start.
	doc, err := c.readDoc(ws, q.File, cfg)
	if err != nil {
		return nil, err
	}
	lineText, ok := doc.line(q.Line - 1)
	if !ok {
		return nil, errorf(CodeInvalidPosition, nil, "line %d is past the end of %s (%d lines)", q.Line, doc.rel, len(doc.lines))
	}
	u16, ok := utf16Col(lineText, q.Column-1)
	if !ok {
		return nil, errorf(CodeInvalidPosition, nil, "column %d is past the end of line %d of %s (%d characters)", q.Column, q.Line, doc.rel, len([]rune(lineText)))
	}
	s, err := c.slot(cfg, ws)
	if err != nil {
		return nil, err
	}
	raw, err := s.ask(ctx, c, q.Op, doc, position{Line: q.Line - 1, Character: u16})
	if err != nil {
		return nil, err
	}
	res := &Result{Workspace: ws.host, Server: cfg.ID}
	if q.Op == Hover {
		res.Kind = KindHover
		if res.Hover, err = parseHover(raw); err != nil {
			return nil, err
		}
		res.HasHover = res.Hover != ""
		return res, nil
	}
	res.Kind = KindLocations
	wire, err := parseLocations(q.Op.method(), raw)
	if err != nil {
		return nil, err
	}
	res.Locations = c.locations(ws, wire)
	return res, nil
}

// enqueue waits for the workspace's turn.
func (c *Client) enqueue(ctx context.Context, ws string) (func(), error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errorf(CodeUnavailable, execworld.ErrClosed, "the LSP client is closed")
	}
	q, ok := c.queues[ws]
	if !ok {
		q = make(chan struct{}, 1)
		c.queues[ws] = q
	}
	c.mu.Unlock()
	select {
	case q <- struct{}{}:
		return func() { <-q }, nil
	case <-ctx.Done():
		return nil, aborted(ctx)
	}
}

func aborted(ctx context.Context) error {
	if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		return errorf(CodeTimeout, context.Cause(ctx), "the query ran out of time")
	}
	return errorf(CodeAborted, context.Cause(ctx), "the query was cancelled")
}

func (c *Client) slot(cfg *ServerConfig, ws *workspace) (*slot, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errorf(CodeUnavailable, execworld.ErrClosed, "the LSP client is closed")
	}
	k := slotKey{cfg.ID, ws.host}
	s, ok := c.slots[k]
	if !ok {
		s = &slot{cfg: cfg, ws: ws, state: StateConfigured}
		c.slots[k] = s
	}
	return s, nil
}

// ask runs the query on the slot's server, starting it when needed, and
// retries once on a fresh process after a transport failure.
func (s *slot) ask(ctx context.Context, c *Client, op Operation, doc *document, pos position) ([]byte, error) {
	var last error
	for attempt := 0; attempt < 2; attempt++ {
		in, err := s.instance(ctx, c)
		if err != nil {
			if !isTransport(err) || attempt == 1 {
				return nil, err
			}
			last = err
			continue
		}
		raw, err := in.query(ctx, op, doc.uri, doc.lang, doc.text, pos)
		if err == nil {
			s.succeeded()
			return raw, nil
		}
		switch {
		case isTransport(err):
			s.failed(in, fmt.Sprintf("the server failed during %s: %v%s", op, err, in.stderrNote()))
			last = errorf(CodeServerFailed, err, "language server %s failed during %s and again on a fresh process: %v%s", s.cfg.ID, op, err, in.stderrNote())
			continue
		case errors.Is(err, errCancelIgnored):
			// It ignored $/cancelRequest: not trusted with the next query.
			s.drop(in)
		}
		return nil, s.classify(ctx, op, err)
	}
	if CodeOf(last) != 0 {
		return nil, last
	}
	return nil, errorf(CodeServerFailed, last, "language server %s: %v", s.cfg.ID, last)
}

// classify turns a query's non-transport failure into an *Error.
func (s *slot) classify(ctx context.Context, op Operation, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var re *ResponseError
	if errors.As(err, &re) {
		return errorf(CodeServerError, re, "language server %s answered %s with an error: %s (code %d)", s.cfg.ID, op, re.Message, re.Code)
	}
	if ctx.Err() != nil {
		return aborted(ctx)
	}
	if errors.Is(err, errRequestTimeout) || errors.Is(err, context.DeadlineExceeded) {
		return errorf(CodeTimeout, err, "language server %s did not answer %s within %v; it was sent $/cancelRequest", s.cfg.ID, op, s.cfg.RequestTimeout)
	}
	return errorf(CodeServerFailed, err, "language server %s: %v", s.cfg.ID, err)
}

// instance returns the running server, starting one when there is none
// (after the backoff its failures earned), or the reason it cannot.
func (s *slot) instance(ctx context.Context, c *Client) (*instance, error) {
	s.mu.Lock()
	if s.inst != nil && !s.inst.failed() {
		in := s.inst
		s.mu.Unlock()
		return in, nil
	}
	if s.inst != nil {
		old := s.inst
		s.inst = nil
		s.mu.Unlock()
		old.kill()
		s.mu.Lock()
	}
	// The first restart after a failure is at once (the one retry of a
	// query); each further one waits twice as long as the last.
	var wait time.Duration
	if s.fails > 0 {
		since := time.Since(s.lastAt)
		if s.fails >= c.maxFail && since < c.backoff[1] {
			why := s.why
			s.mu.Unlock()
			return nil, errorf(CodeServerFailed, nil, "language server %s failed %d times in a row and is not restarted for %v: %s", s.cfg.ID, c.maxFail, (c.backoff[1] - since).Round(time.Second), why)
		}
		if s.fails > 1 {
			wait = min(c.backoff[1], c.backoff[0]<<min(s.fails-2, 16)) - since
		}
	}
	if c.isClosed() {
		s.mu.Unlock()
		return nil, errorf(CodeUnavailable, execworld.ErrClosed, "the LSP client is closed")
	}
	s.state = StateStarting
	s.mu.Unlock()
	if wait > 0 {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, aborted(ctx)
		}
	}
	in, err := startInstance(ctx, c.w, s.cfg, s.ws.host, s.ws.world)
	if err != nil {
		s.mu.Lock()
		if CodeOf(err) == CodeAborted {
			s.state = StateConfigured
		} else {
			s.fails++
			s.lastAt = time.Now()
			s.why = err.Error()
			s.state = StateFailed
		}
		s.mu.Unlock()
		return nil, err
	}
	s.mu.Lock()
	if c.isClosed() {
		// Closed while starting: nothing may outlive Close.
		s.mu.Unlock()
		in.close()
		return nil, errorf(CodeUnavailable, execworld.ErrClosed, "the LSP client is closed")
	}
	s.inst = in
	s.state = StateReady
	s.mu.Unlock()
	return in, nil
}

func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

func (s *slot) succeeded() {
	s.mu.Lock()
	s.fails = 0
	s.mu.Unlock()
}

// failed records a crash of in and tears it down.
func (s *slot) failed(in *instance, why string) {
	s.mu.Lock()
	s.fails++
	s.lastAt = time.Now()
	s.why = why
	s.state = StateFailed
	if s.inst == in {
		s.inst = nil
	}
	s.mu.Unlock()
	in.kill()
}

// drop tears in down without counting a failure.
func (s *slot) drop(in *instance) {
	s.mu.Lock()
	if s.inst == in {
		s.inst = nil
		s.state = StateConfigured
	}
	s.mu.Unlock()
	in.kill()
}

// Close shuts every server down (shutdown and exit, then the process
// group is ended) and waits for them. It is safe to call twice; the
// second call returns execworld.ErrClosed.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return execworld.ErrClosed
	}
	c.closed = true
	slots := c.slots
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range slots {
		s.mu.Lock()
		in := s.inst
		s.inst = nil
		s.mu.Unlock()
		if in != nil {
			wg.Add(1)
			go func() { defer wg.Done(); in.close() }()
		}
	}
	wg.Wait()
	return nil
}

// workspace is a query's workspace: its canonical host path and the
// path the world sees it at.
type workspace struct {
	host, world, rel string // rel: relative to the world's root
}

func (c *Client) workspace(dir string) (*workspace, error) {
	root := c.w.FS.Root()
	if dir == "" {
		dir = root
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(root, dir)
	}
	real, err := filepath.EvalSymlinks(filepath.Clean(dir))
	if err != nil {
		return nil, errorf(CodeWorkspaceRequired, err, "workspace %s: %v; give an existing directory inside the world's workspace %s", dir, err, root)
	}
	rel, err := filepath.Rel(root, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil, errorf(CodeWorkspaceRequired, nil, "workspace %s is outside the world's workspace %s; open the world on it (--workspace)", dir, root)
	}
	info, err := c.w.FS.Stat(rel)
	if err != nil || info.Type != execworld.TypeDir {
		return nil, errorf(CodeWorkspaceRequired, err, "workspace %s is not a directory inside the world's workspace %s", dir, root)
	}
	inside, err := c.w.PathInside(real)
	if err != nil {
		return nil, errorf(CodeWorkspaceRequired, err, "workspace %s: %v", dir, err)
	}
	return &workspace{host: real, world: inside, rel: rel}, nil
}
