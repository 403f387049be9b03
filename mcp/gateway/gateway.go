package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/mcp/bridge"
	"github.com/dsh-dev/dsh/skills"
	"github.com/dsh-dev/dsh/web"
)

// Name is the server name the gateway reports in initialize.
const Name = "dsh"

// Defaults of a gateway.
const (
	// DefaultIdleTimeout closes a session's world after this long
	// without a tool call; the next call opens a new one.
	DefaultIdleTimeout = 30 * time.Minute
	// DefaultMaxReadBytes caps read_file and edit_file.
	DefaultMaxReadBytes = 4_000_000
	// DefaultMaxSpillBytes caps each spill file of exec.
	DefaultMaxSpillBytes = 64 << 20
)

// OpenFunc opens a world for one MCP session. The gateway closes it.
type OpenFunc func(ctx context.Context) (*execworld.World, error)

// BorrowFunc lends a world to one MCP session: a world the gateway does
// not own (a hosted workspace's). The gateway never closes it; it calls
// release once, when the session is done with it (the session ended or
// idled, or the gateway closed).
type BorrowFunc func(ctx context.Context) (w *execworld.World, release func(), err error)

// Options configure a Gateway.
type Options struct {
	// Open opens a session's world. Required unless Borrow is set.
	Open OpenFunc
	// Borrow, instead of Open, lends each session a world the gateway
	// must not close (a workspace's); see BorrowFunc.
	Borrow BorrowFunc
	// Version is reported as the server version.
	Version string
	// Fetch is the template of web_fetch's options; its Dialer is
	// replaced by the session world's Net, so every fetch goes through
	// that world's web policy. If nil, the web defaults.
	Fetch *web.FetchOptions
	// Search answers web_search; nil means no provider is configured.
	Search *web.Registry
	// SearchProvider is the configured provider id ("" selects the one
	// usable provider).
	SearchProvider string
	// Confinement describes the worlds the gateway opens, for status.
	Confinement Confinement
	// Audit receives one JSON line per tool call. If nil, none.
	Audit io.Writer
	// IdleTimeout closes a session's world after this long without a
	// tool call. Zero means DefaultIdleTimeout; negative, never.
	IdleTimeout time.Duration
	// SpillDir is where exec keeps the spill files of each world, in a
	// private directory per world removed with it. If empty, the
	// system's temporary directory.
	SpillDir string
	// MaxSpillBytes caps each spill file (stdout and stderr separately).
	// If zero, DefaultMaxSpillBytes.
	MaxSpillBytes int64
	// MaxReadBytes caps read_file and edit_file. If zero,
	// DefaultMaxReadBytes.
	MaxReadBytes int64
	// Logger receives operational errors. If nil, they are discarded.
	Logger *slog.Logger
	// Observe, if set, is told of every tool call when it ends: the
	// tool, its status (ok, tool_error, canceled) and its duration
	// (metrics).
	Observe func(tool, status string, d time.Duration)
	// LSP, if set, offers the lsp tool: it makes the LSP client of a
	// session's world (one per world, made on the first lsp call and
	// closed before the world).
	LSP LSPFactory
	// LSPTimeout is the lsp tool's budget. If zero, DefaultLSPTimeout.
	LSPTimeout time.Duration
	// Bridge, if set, offers the tools of its MCP servers (mcp__*),
	// shared by every session: the caller starts it before New, so that
	// the first tools/list has them, and closes it after Close. Changes
	// of its tool set reach connected clients as list_changed.
	Bridge *bridge.Bridge
	// Skills, if set, offers the skill catalog: the skill tool, the
	// user-invocable skills as prompts, their files as skill:// resources.
	Skills *skills.Discoverer
}

// Gateway is the MCP server of dsh serve. Its Server may be run over any
// number of transports; each MCP session gets its own world.
type Gateway struct {
	opts   Options
	server *mcp.Server
	log    *slog.Logger
	audit  *auditor

	mu       sync.Mutex // guards the fields below
	sessions map[*mcp.ServerSession]*session
	closed   bool
	inflight sync.WaitGroup

	bridged *bridged      // the bridge's tools as served, nil without one
	skills  *servedSkills // the skill catalog as served, nil without one
}

// New builds a gateway with its native tools.
func New(opts *Options) (*Gateway, error) {
	if opts == nil || (opts.Open == nil) == (opts.Borrow == nil) {
		return nil, errors.New("gateway: exactly one of Options.Open and Options.Borrow is required")
	}
	g := &Gateway{opts: *opts, sessions: map[*mcp.ServerSession]*session{}}
	if g.opts.IdleTimeout == 0 {
		g.opts.IdleTimeout = DefaultIdleTimeout
	}
	if g.opts.MaxSpillBytes <= 0 {
		g.opts.MaxSpillBytes = DefaultMaxSpillBytes
	}
	if g.opts.MaxReadBytes <= 0 {
		g.opts.MaxReadBytes = DefaultMaxReadBytes
	}
	if g.opts.LSPTimeout <= 0 {
		g.opts.LSPTimeout = DefaultLSPTimeout
	}
	if g.opts.SpillDir == "" {
		g.opts.SpillDir = os.TempDir()
	}
	g.log = g.opts.Logger
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	g.audit = &auditor{w: g.opts.Audit}
	version := g.opts.Version
	if version == "" {
		version = "dev"
	}
	g.server = mcp.NewServer(&mcp.Implementation{Name: Name, Title: "dsh confined tools", Version: version}, &mcp.ServerOptions{
		Instructions: instructions(opts.Bridge != nil),
		Logger:       g.log,
		Capabilities: capabilities(opts.Bridge != nil || opts.Skills != nil),
	})
	g.addTools()
	if g.opts.Bridge != nil {
		g.startBridged()
	}
	if g.opts.Skills != nil {
		g.startSkills()
	}
	return g, nil
}

func instructions(bridged bool) string {
	s := "Every tool runs in one confined execution world per session: exec runs commands, the file tools work relative to the workspace, web_fetch goes through the web policy, lsp asks language servers running in the world."
	if bridged {
		s += " The mcp__<server>__<tool> tools are third-party MCP servers', each server confined in a world of its own."
	}
	return s + " status says what is configured and ready."
}

// capabilities are the gateway's: with a bridge or skills, resources and
// prompts, whose lists change.
func capabilities(listed bool) *mcp.ServerCapabilities {
	c := &mcp.ServerCapabilities{
		Tools:     &mcp.ToolCapabilities{ListChanged: true},
		Resources: &mcp.ResourceCapabilities{ListChanged: listed},
	}
	if listed {
		c.Prompts = &mcp.PromptCapabilities{ListChanged: true}
	}
	return c
}

// Server is the MCP server, to run over a transport.
func (g *Gateway) Server() *mcp.Server { return g.server }

// Close closes every session's world and refuses new ones. It waits for
// the worlds to close (their processes killed, their state removed).
func (g *Gateway) Close() error {
	g.mu.Lock()
	g.closed = true
	ss := make([]*session, 0, len(g.sessions))
	for _, s := range g.sessions {
		ss = append(ss, s)
	}
	g.mu.Unlock()
	if g.bridged != nil {
		g.bridged.stop()
	}
	var errs []error
	for _, s := range ss {
		if err := s.close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Drain waits until the tool calls in flight have returned or ctx is
// done (then the caller closes the gateway, which cancels the rest).
func (g *Gateway) Drain(ctx context.Context) error {
	done := make(chan struct{})
	go func() { g.inflight.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Worlds returns the IDs of the worlds open now.
func (g *Gateway) Worlds() []string {
	g.mu.Lock()
	ss := make([]*session, 0, len(g.sessions))
	for _, s := range g.sessions {
		ss = append(ss, s)
	}
	g.mu.Unlock()
	var ids []string
	for _, s := range ss {
		if id := s.worldID(); id != "" {
			ids = append(ids, id)
		}
	}
	return ids
}

// Sessions is the number of MCP sessions the gateway knows.
func (g *Gateway) Sessions() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.sessions)
}

// errClosed is a call on a closed gateway or session.
var errClosed = errors.New("dsh serve is shutting down; the world of this session is closed: reconnect to a running server")

// sessionOf returns the state of an MCP session, made on its first call.
// A session's state, world included, goes when the session ends.
func (g *Gateway) sessionOf(ss *mcp.ServerSession) (*session, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, errClosed
	}
	if s, ok := g.sessions[ss]; ok {
		return s, nil
	}
	s := &session{g: g, id: sessionID(ss)}
	g.sessions[ss] = s
	if ss != nil {
		go func() {
			ss.Wait()
			s.close()
			g.mu.Lock()
			delete(g.sessions, ss)
			g.mu.Unlock()
		}()
	}
	return s, nil
}

func sessionID(ss *mcp.ServerSession) string {
	if ss != nil {
		if id := ss.ID(); id != "" {
			return id
		}
	}
	return "s-" + randomHex(6)
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// session is one MCP session's state: its world, opened lazily.
type session struct {
	g  *Gateway
	id string

	openMu sync.Mutex // serialises opening the world

	mu    sync.Mutex // guards the fields below
	world *execworld.World
	// release gives a borrowed world back (Options.Borrow); nil for a
	// world the session owns and closes.
	release func()
	lsp     LSPClient // the world's language servers, nil until an lsp call
	spill   string    // the world's private spill directory
	closed  bool
	// closeDone is closed when the first close has finished.
	closeDone chan struct{}
	inflight  int
	idle      *time.Timer
	shell     string // "bash" or "sh" once known
}

// begin marks a tool call in flight (the idle timer waits for it).
func (s *session) begin() {
	s.mu.Lock()
	s.inflight++
	if s.idle != nil {
		s.idle.Stop()
	}
	s.mu.Unlock()
}

// end marks a tool call done and re-arms the idle timer.
func (s *session) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inflight--
	if s.inflight > 0 || s.world == nil || s.g.opts.IdleTimeout < 0 {
		return
	}
	w := s.world
	if s.idle != nil {
		s.idle.Stop()
	}
	s.idle = time.AfterFunc(s.g.opts.IdleTimeout, func() { s.closeIdle(w) })
}

// closeIdle closes w if it is still the session's world and idle.
func (s *session) closeIdle(w *execworld.World) {
	s.mu.Lock()
	if s.world != w || s.inflight > 0 {
		s.mu.Unlock()
		return
	}
	s.world, s.shell = nil, ""
	spill, lc, rel := s.spill, s.lsp, s.release
	s.spill, s.lsp, s.release = "", nil, nil
	s.mu.Unlock()
	s.g.log.Info("closing an idle world", "session", s.id, "world", w.ID)
	closeWorld(w, spill, lc, rel)
}

// getWorld returns the session's world, opening it on first use.
func (s *session) getWorld(ctx context.Context) (*execworld.World, error) {
	s.openMu.Lock()
	defer s.openMu.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errClosed
	}
	if w := s.world; w != nil {
		s.mu.Unlock()
		if w.Paused() {
			// A borrowed world (a workspace's) paused since: no tool
			// may reach it, the file tools included.
			return nil, execworld.ErrPaused
		}
		return w, nil
	}
	s.mu.Unlock()
	w, rel, err := s.g.world(ctx)
	if err != nil {
		return nil, fmt.Errorf("opening this session's world: %w", err)
	}
	spill, err := os.MkdirTemp(s.g.opts.SpillDir, "dsh-spill-"+w.ID+"-")
	if err != nil {
		closeWorld(w, "", nil, rel)
		return nil, fmt.Errorf("making the spill directory of world %s in %s: %w", w.ID, s.g.opts.SpillDir, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		closeWorld(w, spill, nil, rel)
		return nil, errClosed
	}
	s.world, s.spill, s.release = w, spill, rel
	return w, nil
}

// currentWorld is the open world, or nil; it never opens one.
func (s *session) currentWorld() *execworld.World {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.world
}

func (s *session) worldID() string {
	if w := s.currentWorld(); w != nil {
		return w.ID
	}
	return ""
}

// spillDir is the private spill directory of world w, or "".
func (s *session) spillDir(w *execworld.World) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.world != w {
		return ""
	}
	return s.spill
}

// close closes the session's world; later calls fail. A second close
// (the gateway's, while the session's end closes it) returns once the
// first is done, so nothing is left when either returns.
func (s *session) close() error {
	s.mu.Lock()
	if s.closed {
		done := s.closeDone
		s.mu.Unlock()
		<-done
		return nil
	}
	s.closed = true
	s.closeDone = make(chan struct{})
	defer close(s.closeDone)
	if s.idle != nil {
		s.idle.Stop()
	}
	w, spill, lc, rel := s.world, s.spill, s.lsp, s.release
	s.world, s.spill, s.lsp, s.release = nil, "", nil, nil
	s.mu.Unlock()
	// A world being opened right now is closed by getWorld, which sees
	// closed; wait for it so Close returns with nothing left.
	s.openMu.Lock()
	//lint:ignore SA2001 only a barrier: getWorld holds openMu while it opens
	s.openMu.Unlock()
	if w == nil {
		return nil
	}
	return closeWorld(w, spill, lc, rel)
}

// world opens a session's world (Open), or borrows one (Borrow): then
// release is non-nil.
func (g *Gateway) world(ctx context.Context) (*execworld.World, func(), error) {
	if g.opts.Borrow != nil {
		w, rel, err := g.opts.Borrow(ctx)
		if err == nil && rel == nil {
			rel = func() {}
		}
		return w, rel, err
	}
	w, err := g.opts.Open(ctx)
	return w, nil, err
}

// closeWorld closes w, its language servers first (they run in it); a
// borrowed world (release non-nil) is given back instead of closed.
func closeWorld(w *execworld.World, spill string, lc LSPClient, release func()) error {
	var lerr error
	if lc != nil {
		if e := lc.Close(); e != nil && !errors.Is(e, execworld.ErrClosed) {
			lerr = fmt.Errorf("closing the language servers of world %s: %w", w.ID, e)
		}
	}
	var err error
	if release != nil {
		release()
	} else if err = w.Close(); errors.Is(err, execworld.ErrClosed) {
		err = nil
	}
	err = errors.Join(lerr, err)
	if spill != "" {
		if rerr := os.RemoveAll(spill); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	return err
}

// SpillPrefix begins the path of a spill file; read_file reads such a
// path from the world's private spill directory, not the workspace.
const SpillPrefix = "dsh-spill:"

// spillPath is the path read_file takes for a spill file named base.
func spillPath(base string) string { return SpillPrefix + base }

// openSpill opens a spill file of the session's current world.
func (s *session) openSpill(w *execworld.World, name string) (*os.File, error) {
	dir := s.spillDir(w)
	if dir == "" {
		return nil, fmt.Errorf("no spill files: this world has none (spill files go with the world that made them)")
	}
	if name == "" || filepath.Base(name) != name || name == "." || name == ".." {
		return nil, fmt.Errorf("spill name %q is not one exec returned; pass the spill path exactly as exec gave it", name)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return root.Open(name)
}
