// Package clienttest is a fake of the workspaces REST API
// (docs/WORKSPACES.md) for tests of its clients: the routes, the token
// rules and the error bodies over an in-memory store, with a toy exec
// whose commands exercise streaming and exit statuses. It is not the
// server; dsh serve --http is.
package clienttest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/workspace"
)

// Fake is the fake server's state.
type Fake struct {
	// Token is the server token.
	Token string
	// CreateDelay makes every create take this long.
	CreateDelay time.Duration

	mu  sync.Mutex
	ws  map[string]*fakeWS
	srv *httptest.Server
}

type fakeWS struct {
	w     workspace.Workspace
	token string
	files map[string]fakeFile
}

type fakeFile struct {
	data []byte
	mode string
}

// New starts a fake server with the server token token, closed when the
// test ends.
func New(t testing.TB, token string) *Fake {
	f := &Fake{Token: token, ws: map[string]*fakeWS{}}
	f.srv = httptest.NewServer(f.handler())
	t.Cleanup(f.srv.Close)
	return f
}

// URL is the server's base URL.
func (f *Fake) URL() string { return f.srv.URL }

// Names lists the workspaces that exist.
func (f *Fake) Names() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for n := range f.ws {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// File returns a workspace file's bytes and mode, as written.
func (f *Fake) File(name, p string) ([]byte, string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w, ok := f.ws[name]
	if !ok {
		return nil, "", false
	}
	file, ok := w.files[p]
	return file.data, file.mode, ok
}

func writeErr(w http.ResponseWriter, status int, code, format string, args ...any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": workspace.ErrorBody{Code: code, Message: fmt.Sprintf(format, args...)}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func (f *Fake) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/workspaces", f.serverOnly(f.create))
	mux.HandleFunc("GET /v1/workspaces", f.serverOnly(f.list))
	mux.HandleFunc("GET /v1/workspaces/{name}", f.one(func(w http.ResponseWriter, r *http.Request, ws *fakeWS) {
		writeJSON(w, 200, ws.w)
	}))
	mux.HandleFunc("DELETE /v1/workspaces/{name}", f.one(func(w http.ResponseWriter, r *http.Request, ws *fakeWS) {
		delete(f.ws, ws.w.Name)
		w.WriteHeader(http.StatusNoContent)
	}))
	mux.HandleFunc("POST /v1/workspaces/{name}/extend", f.one(func(w http.ResponseWriter, r *http.Request, ws *fakeWS) {
		var body struct {
			By workspace.Duration `json:"by"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.By <= 0 {
			writeErr(w, 400, "invalid", "extend: body must be {\"by\":\"30m\"}: %v", err)
			return
		}
		if t := time.Now().Add(time.Duration(body.By)); t.After(ws.w.ExpiresAt) {
			ws.w.ExpiresAt = t
		}
		writeJSON(w, 200, ws.w)
	}))
	mux.HandleFunc("POST /v1/workspaces/{name}/pause", f.one(func(w http.ResponseWriter, r *http.Request, ws *fakeWS) {
		ws.w.State = workspace.StatePaused
		writeJSON(w, 200, ws.w)
	}))
	mux.HandleFunc("POST /v1/workspaces/{name}/resume", f.one(func(w http.ResponseWriter, r *http.Request, ws *fakeWS) {
		ws.w.State = workspace.StateRunning
		writeJSON(w, 200, ws.w)
	}))
	mux.HandleFunc("POST /v1/workspaces/{name}/exec", f.one(f.exec))
	mux.HandleFunc("GET /v1/workspaces/{name}/files/{path...}", f.file(func(w http.ResponseWriter, r *http.Request, ws *fakeWS, p string) {
		file, ok := ws.files[p]
		if !ok {
			writeErr(w, 404, "not_found", "no file %q in workspace %q", p, ws.w.Name)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(file.data)
	}))
	mux.HandleFunc("PUT /v1/workspaces/{name}/files/{path...}", f.file(func(w http.ResponseWriter, r *http.Request, ws *fakeWS, p string) {
		data, err := readAll(r)
		if err != nil {
			writeErr(w, 413, "too_large", "%v", err)
			return
		}
		mode := r.URL.Query().Get("mode")
		if mode == "" {
			mode = "0644"
		}
		ws.files[p] = fakeFile{data: data, mode: mode}
		w.WriteHeader(http.StatusNoContent)
	}))
	mux.HandleFunc("DELETE /v1/workspaces/{name}/files/{path...}", f.file(func(w http.ResponseWriter, r *http.Request, ws *fakeWS, p string) {
		if _, ok := ws.files[p]; !ok {
			writeErr(w, 404, "not_found", "no file %q in workspace %q", p, ws.w.Name)
			return
		}
		delete(ws.files, p)
		w.WriteHeader(http.StatusNoContent)
	}))
	mux.HandleFunc("GET /v1/workspaces/{name}/ls/{path...}", f.one(func(w http.ResponseWriter, r *http.Request, ws *fakeWS) {
		dir := strings.Trim(r.PathValue("path"), "/")
		entries := []workspace.Entry{}
		for p, file := range ws.files {
			if path.Dir(p) == dir || dir == "" && !strings.Contains(p, "/") {
				entries = append(entries, workspace.Entry{Name: path.Base(p), Type: "file", Size: int64(len(file.data)), Mode: file.mode})
			}
		}
		sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
		writeJSON(w, 200, map[string]any{"entries": entries})
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern == "" {
			writeErr(w, 404, "not_found", "no route %s %s", r.Method, r.URL.Path)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

func readAll(r *http.Request) ([]byte, error) {
	return io.ReadAll(http.MaxBytesReader(nil, r.Body, 1<<20))
}

func bearer(r *http.Request) string {
	t, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return t
}

// serverOnly lets only the server token through.
func (f *Fake) serverOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok := bearer(r)
		switch {
		case tok == "":
			writeErr(w, 401, "unauthorized", "no token: send Authorization: Bearer TOKEN")
		case tok == f.Token:
			h(w, r)
		case f.isWorkspaceToken(tok):
			writeErr(w, 403, "forbidden", "a workspace's token does not reach %s %s", r.Method, r.URL.Path)
		default:
			writeErr(w, 401, "unauthorized", "unknown token")
		}
	}
}

func (f *Fake) isWorkspaceToken(tok string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ws := range f.ws {
		if ws.token == tok {
			return true
		}
	}
	return false
}

// one finds {name} and checks the token reaches it; h runs with f.mu held.
func (f *Fake) one(h func(http.ResponseWriter, *http.Request, *fakeWS)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok := bearer(r)
		if tok == "" {
			writeErr(w, 401, "unauthorized", "no token: send Authorization: Bearer TOKEN")
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		name := r.PathValue("name")
		ws, ok := f.ws[name]
		own := ok && ws.token == tok
		if tok != f.Token && !own {
			for _, o := range f.ws {
				if o.token == tok {
					writeErr(w, 403, "forbidden", "this workspace token does not reach workspace %q", name)
					return
				}
			}
			writeErr(w, 401, "unauthorized", "unknown token")
			return
		}
		if !ok {
			writeErr(w, 404, "not_found", "no such workspace %q: dsh world ls lists them", name)
			return
		}
		h(w, r, ws)
	}
}

func (f *Fake) file(h func(http.ResponseWriter, *http.Request, *fakeWS, string)) http.HandlerFunc {
	return f.one(func(w http.ResponseWriter, r *http.Request, ws *fakeWS) {
		p := path.Clean(r.PathValue("path"))
		if p == "." || strings.HasPrefix(p, "..") || strings.HasPrefix(p, "/") {
			writeErr(w, 400, "invalid", "path %q leaves the workspace", r.PathValue("path"))
			return
		}
		if ws.w.State == workspace.StatePaused {
			writeErr(w, 409, "conflict", "workspace %q is paused; resume it first", ws.w.Name)
			return
		}
		h(w, r, ws, p)
	})
}

func (f *Fake) create(w http.ResponseWriter, r *http.Request) {
	var req workspace.CreateRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeErr(w, 400, "invalid", "create: %v", err)
		return
	}
	if req.Name == "" {
		req.Name = "ws-" + randHex(5)
	}
	if strings.ToLower(req.Name) != req.Name || strings.ContainsAny(req.Name, " /_.") {
		writeErr(w, 400, "invalid", "name %q: only a-z, 0-9 and -", req.Name)
		return
	}
	time.Sleep(f.CreateDelay)
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.ws[req.Name]; ok {
		writeErr(w, 409, "conflict", "workspace %q already exists", req.Name)
		return
	}
	if req.Driver == "" {
		req.Driver = "native"
	}
	ttl := time.Duration(req.TTL)
	if ttl == 0 {
		ttl = time.Hour
	}
	now := time.Now().UTC().Truncate(time.Second)
	ws := &fakeWS{token: "wst-" + randHex(8), files: map[string]fakeFile{}, w: workspace.Workspace{
		Name: req.Name, Driver: req.Driver, Image: req.Image, Limits: req.Limits, Allow: req.Allow, Labels: req.Labels,
		State: workspace.StateRunning, World: randHex(5), CreatedAt: now, ExpiresAt: now.Add(ttl),
		IdleTimeout: req.IdleTimeout, LastUsed: now,
	}}
	f.ws[req.Name] = ws
	writeJSON(w, 201, workspace.Created{Workspace: ws.w, Token: ws.token})
}

func (f *Fake) list(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []workspace.Workspace{}
	for _, ws := range f.ws {
		out = append(out, ws.w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	writeJSON(w, 200, map[string]any{"workspaces": out})
}

// exec is a toy: "echo ARGS", "cat" (stdin), "env", "pwd", "interleave"
// (stdout, stderr, stdout as three events), "exit N" (a line on stderr,
// then code N), "signal NAME" (killed by NAME), "cut" (output, then the
// stream ends without an exit); anything else cannot start (400).
func (f *Fake) exec(w http.ResponseWriter, r *http.Request, ws *fakeWS) {
	var req workspace.ExecRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Argv) == 0 {
		writeErr(w, 400, "invalid", "exec: argv required (%v)", err)
		return
	}
	if ws.w.State == workspace.StatePaused {
		writeErr(w, 409, "conflict", "workspace %q is paused; resume it first", ws.w.Name)
		return
	}
	known := map[string]bool{"echo": true, "cat": true, "env": true, "pwd": true, "interleave": true, "exit": true, "signal": true, "cut": true}
	if !known[req.Argv[0]] {
		writeErr(w, 400, "invalid", "starting %q: executable file not found in $PATH", req.Argv[0])
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(200)
	enc := json.NewEncoder(w)
	fl, _ := w.(http.Flusher)
	send := func(ev workspace.ExecEvent) {
		enc.Encode(ev)
		if fl != nil {
			fl.Flush()
		}
	}
	out := func(s string) { send(workspace.ExecEvent{Stdout: []byte(s)}) }
	errOut := func(s string) { send(workspace.ExecEvent{Stderr: []byte(s)}) }
	exit := workspace.ExecExit{DurationMS: 1}
	args := req.Argv[1:]
	switch req.Argv[0] {
	case "echo":
		out(strings.Join(args, " ") + "\n")
	case "cat":
		out(string(req.Stdin))
	case "env":
		out(strings.Join(req.Env, "\n") + "\n")
	case "pwd":
		out("/" + req.Dir + " timeout=" + time.Duration(req.Timeout).String() + "\n")
	case "interleave":
		out("o1\n")
		errOut("e1\n")
		out("o2\n")
	case "exit":
		n, _ := strconv.Atoi(args[0])
		errOut("exiting " + args[0] + "\n")
		exit.Code = n
	case "signal":
		exit.Code, exit.Signal = -1, args[0]
	case "cut":
		out("partial\n")
		return
	}
	send(workspace.ExecEvent{Exit: &exit})
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
