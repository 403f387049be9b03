// Package api serves the REST API of hosted workspaces (docs/WORKSPACES.md)
// over a workspace.Manager: the routes under /v1, their bearer-token
// auth, the validation of every input, the error JSON, exec streamed as
// NDJSON, the files of a workspace through its world's FS, each
// workspace's MCP endpoint (the dsh serve tools bound to its world) and
// the OpenAPI document of it all.
//
// Auth: the server's token reaches every route; a workspace's token
// (returned once, by its create) reaches only the routes of that
// workspace, its MCP endpoint included. Create and list are server
// routes: a workspace token there is 403, as on another workspace's
// routes; no token, or one the server does not know, is 401. A server
// without a token of its own (dsh serve on loopback without one) lets a
// request without a token reach everything, as its /mcp does; a token
// that is sent must still be one it knows.
package api

import (
	"context"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/dsh-dev/dsh/internal/httpauth"
	"github.com/dsh-dev/dsh/mcp/gateway"
	"github.com/dsh-dev/dsh/workspace"
)

// Defaults of the API.
const (
	DefaultMaxBody        = 1 << 20
	DefaultMaxFile        = 64 << 20
	DefaultExecTimeout    = 10 * time.Minute
	DefaultMaxExecTimeout = time.Hour
)

// Options configure the API.
type Options struct {
	// Manager owns the workspaces. Required.
	Manager workspace.Manager
	// Token is the server's bearer token; see the package comment for
	// an empty one.
	Token string
	// MaxBody caps JSON request bodies (413 beyond); exec's stdin is in
	// it. If zero, DefaultMaxBody.
	MaxBody int64
	// MaxFile caps a file read or written through files/ (413 beyond).
	// If zero, DefaultMaxFile.
	MaxFile int64
	// MaxExecTimeout is the longest timeout an exec may ask for. If
	// zero, DefaultMaxExecTimeout.
	MaxExecTimeout time.Duration
	// MCP, if set, makes the gateway options of a workspace's MCP
	// endpoint (tools, web, audit, ...); the API sets their Borrow (the
	// workspace's world, never closed by the gateway) and IdleTimeout.
	// If nil, the endpoint answers 404.
	MCP func(ws *workspace.Workspace) (*gateway.Options, error)
	// MCPIdle ends an MCP session (and gives its world back) after this
	// long without a request, or after the workspace's idle timeout if
	// that is shorter. If zero, gateway.DefaultIdleTimeout.
	MCPIdle time.Duration
	// MCPMaxBody caps an MCP request body. If zero, MaxBody.
	MCPMaxBody int64
	// Logger receives internal errors (500s). If nil, they are discarded.
	Logger *slog.Logger
}

// API is the http.Handler of /v1. Close it to end its MCP sessions.
type API struct {
	opts Options
	m    workspace.Manager
	mux  *http.ServeMux
	log  *slog.Logger

	mu  sync.Mutex
	mcp map[string]*mcpEntry // by workspace name
}

// scope says which tokens reach a route.
type scope int

const (
	scopePublic    scope = iota // no token needed
	scopeServer                 // the server's token only
	scopeWorkspace              // the server's or the workspace's ({name})
)

// route is one route of the API; the mux and the OpenAPI test both read
// the table, so a route cannot be served without being documented.
type route struct {
	method  string // "" for every method (the MCP endpoint)
	pattern string // a ServeMux pattern without the method
	scope   scope
	handle  func(a *API, w http.ResponseWriter, r *http.Request)
}

var routes = []route{
	{"POST", "/v1/workspaces", scopeServer, (*API).create},
	{"GET", "/v1/workspaces", scopeServer, (*API).list},
	{"GET", "/v1/workspaces/{name}", scopeWorkspace, (*API).get},
	{"DELETE", "/v1/workspaces/{name}", scopeWorkspace, (*API).delete},
	{"POST", "/v1/workspaces/{name}/exec", scopeWorkspace, (*API).exec},
	{"GET", "/v1/workspaces/{name}/files/{path...}", scopeWorkspace, (*API).readFile},
	{"PUT", "/v1/workspaces/{name}/files/{path...}", scopeWorkspace, (*API).writeFile},
	{"DELETE", "/v1/workspaces/{name}/files/{path...}", scopeWorkspace, (*API).removeFile},
	{"GET", "/v1/workspaces/{name}/ls/{path...}", scopeWorkspace, (*API).listDir},
	{"POST", "/v1/workspaces/{name}/extend", scopeWorkspace, (*API).extend},
	{"POST", "/v1/workspaces/{name}/pause", scopeWorkspace, (*API).pause},
	{"POST", "/v1/workspaces/{name}/resume", scopeWorkspace, (*API).resume},
	{"", "/v1/workspaces/{name}/mcp", scopeWorkspace, (*API).serveMCP},
	{"GET", "/v1/openapi.json", scopePublic, (*API).openapi},
}

// New builds the API over opts.Manager.
func New(opts *Options) *API {
	a := &API{opts: *opts, m: opts.Manager, mux: http.NewServeMux(), mcp: map[string]*mcpEntry{}}
	if a.opts.MaxBody <= 0 {
		a.opts.MaxBody = DefaultMaxBody
	}
	if a.opts.MaxFile <= 0 {
		a.opts.MaxFile = DefaultMaxFile
	}
	if a.opts.MaxExecTimeout <= 0 {
		a.opts.MaxExecTimeout = DefaultMaxExecTimeout
	}
	if a.opts.MCPIdle <= 0 {
		a.opts.MCPIdle = gateway.DefaultIdleTimeout
	}
	if a.opts.MCPMaxBody <= 0 {
		a.opts.MCPMaxBody = a.opts.MaxBody
	}
	a.log = a.opts.Logger
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	methods := map[string][]string{}
	for _, rt := range routes {
		p := rt.pattern
		if rt.method != "" {
			p = rt.method + " " + p
			methods[rt.pattern] = append(methods[rt.pattern], rt.method)
		}
		a.mux.Handle(p, a.guard(rt))
	}
	// Another method on a route's path: 405 in the API's error JSON (the
	// method-less pattern is less specific than the routes').
	for p, ms := range methods {
		if a.hasAnyMethod(p) {
			continue
		}
		allow := strings.Join(ms, ", ")
		a.mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			writeError(w, &apiError{http.StatusMethodNotAllowed, codeNotFound, r.Method + " is not a method of " + p + "; use " + allow})
		})
	}
	a.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, errorf(http.StatusNotFound, codeNotFound, "no route %s %s; the routes are in GET /v1/openapi.json", r.Method, r.URL.Path))
	})
	return a
}

func (a *API) hasAnyMethod(pattern string) bool {
	for _, rt := range routes {
		if rt.pattern == pattern && rt.method == "" {
			return true
		}
	}
	return false
}

// ServeHTTP serves the API.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// ServeMux would redirect a path with "..", "." or "//" to its clean
	// form, possibly another workspace's route; such a path is refused
	// instead, as a path that leaves a workspace is.
	if p := r.URL.Path; !isClean(p) {
		writeError(w, errorf(http.StatusBadRequest, codeInvalid, "request path %q has a \".\", \"..\" or empty segment; send it clean (%s)", p, path.Clean(p)))
		return
	}
	a.mux.ServeHTTP(w, r)
}

// isClean tells whether p is an absolute path without ".", ".." or
// empty segments (a trailing slash aside).
func isClean(p string) bool {
	if !strings.HasPrefix(p, "/") || strings.IndexByte(p, 0) >= 0 {
		return false
	}
	t := strings.TrimSuffix(p, "/")
	return t == "" || path.Clean(t) == t
}

// Close ends the MCP sessions of every workspace, giving their worlds
// back. The Manager is the caller's to close, after.
func (a *API) Close() error {
	a.mu.Lock()
	es := a.mcp
	a.mcp = map[string]*mcpEntry{}
	a.mu.Unlock()
	for _, e := range es {
		e.g.Close()
	}
	return nil
}

// guard checks the route's token, then serves it.
func (a *API) guard(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if e := a.authorize(r, rt); e != nil {
			if e.status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="dsh serve"`)
			}
			writeError(w, e)
			return
		}
		if rt.scope == scopeWorkspace {
			if e := checkName(r.PathValue("name")); e != nil {
				writeError(w, e)
				return
			}
		}
		rt.handle(a, w, r)
	})
}

func (a *API) authorize(r *http.Request, rt route) *apiError {
	if rt.scope == scopePublic {
		return nil
	}
	tok := httpauth.FromRequest(r)
	if tok == "" {
		if a.opts.Token == "" {
			return nil
		}
		return errorf(http.StatusUnauthorized, codeUnauthorized, "no token: send Authorization: Bearer TOKEN with the server's token or, for one workspace's routes, the token its create returned")
	}
	if httpauth.Equal(tok, a.opts.Token) {
		return nil
	}
	if rt.scope == scopeWorkspace && a.m.Authorize(r.PathValue("name"), tok) {
		return nil
	}
	if owner := a.tokenOwner(r.Context(), tok); owner != "" {
		if rt.scope == scopeServer {
			return errorf(http.StatusForbidden, codeForbidden, "the token of workspace %q reaches only that workspace's routes; %s %s needs the server's token", owner, r.Method, rt.pattern)
		}
		return errorf(http.StatusForbidden, codeForbidden, "the token of workspace %q does not reach workspace %q; use that workspace's token or the server's", owner, r.PathValue("name"))
	}
	return errorf(http.StatusUnauthorized, codeUnauthorized, "the token is unknown to this server: send the server's token or a token a create returned (a deleted workspace's token is void)")
}

// tokenOwner is the workspace whose token tok is, or "".
func (a *API) tokenOwner(ctx context.Context, tok string) string {
	wss, err := a.m.List(ctx)
	if err != nil {
		return ""
	}
	for _, ws := range wss {
		if a.m.Authorize(ws.Name, tok) {
			return ws.Name
		}
	}
	return ""
}
