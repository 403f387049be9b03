package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/workspace"
	"github.com/dsh-dev/dsh/workspace/api"
)

const serverToken = "server-token"

type fixture struct {
	m     *fakeManager
	a     *api.API
	srv   *httptest.Server
	token string // the server's
}

func newFixture(t *testing.T, edit func(*api.Options)) *fixture {
	t.Helper()
	f := &fixture{m: newFakeManager(t)}
	opts := &api.Options{Manager: f.m, Token: serverToken, MaxBody: 4096, MaxFile: 1024, MaxExecTimeout: time.Hour}
	if edit != nil {
		edit(opts)
	}
	f.a, f.token = api.New(opts), opts.Token
	f.srv = httptest.NewServer(f.a)
	t.Cleanup(func() { f.srv.Close(); f.a.Close() })
	return f
}

// do sends a request; body is JSON-encoded unless it is a string or []byte.
func (f *fixture) do(t *testing.T, token, method, path string, body any) *http.Response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, f.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func (f *fixture) create(t *testing.T, name string) *workspace.Created {
	t.Helper()
	resp := f.do(t, f.token, "POST", "/v1/workspaces", map[string]any{"name": name})
	if resp.StatusCode != 201 {
		t.Fatalf("create %s: %d %s", name, resp.StatusCode, readAll(t, resp))
	}
	var c workspace.Created
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		t.Fatal(err)
	}
	return &c
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// wantError checks an error answer: its status, its code, its Content-Type
// and that its message contains each of want.
func wantError(t *testing.T, resp *http.Response, status int, code string, want ...string) {
	t.Helper()
	body := readAll(t, resp)
	if resp.StatusCode != status {
		t.Fatalf("%s %s: status %d, want %d: %s", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, status, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q of an error, want application/json", ct)
	}
	var e struct {
		Error workspace.ErrorBody `json:"error"`
	}
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("error body %q is not {\"error\":{\"code\",\"message\"}}: %v", body, err)
	}
	if e.Error.Code != code {
		t.Errorf("code %q, want %q (%s)", e.Error.Code, code, e.Error.Message)
	}
	for _, w := range want {
		if !strings.Contains(e.Error.Message, w) {
			t.Errorf("message %q lacks %q", e.Error.Message, w)
		}
	}
}

// routeCase is a request on one route of the table, for the auth matrix.
type routeCase struct {
	method, path string
	body         any
	server       bool // a server-only route
}

func routeCases(ws string) []routeCase {
	p := "/v1/workspaces/" + ws
	return []routeCase{
		{"POST", "/v1/workspaces", map[string]any{"name": "made-by-matrix"}, true},
		{"GET", "/v1/workspaces", nil, true},
		{"GET", p, nil, false},
		{"POST", p + "/exec", map[string]any{"argv": []string{"true"}}, false},
		{"PUT", p + "/files/m.txt", "x", false},
		{"GET", p + "/files/m.txt", nil, false},
		{"GET", p + "/ls/", nil, false},
		{"DELETE", p + "/files/m.txt", nil, false},
		{"POST", p + "/extend", map[string]any{"by": "1m"}, false},
		{"POST", p + "/pause", nil, false},
		{"POST", p + "/resume", nil, false},
		{"POST", p + "/mcp", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "ping"}, false},
		{"DELETE", p, nil, false},
	}
}

func TestAuthMatrix(t *testing.T) {
	f := newFixture(t, mcpOptions)
	a := f.create(t, "alpha")
	b := f.create(t, "beta")
	for _, rc := range routeCases("alpha") {
		if rc.method == "DELETE" && !strings.Contains(rc.path, "/files/") {
			continue // the owner's pass below deletes it
		}
		name := rc.method + " " + rc.path
		wantError(t, f.do(t, "", rc.method, rc.path, rc.body), 401, "unauthorized", "no token")
		wantError(t, f.do(t, "not-a-token", rc.method, rc.path, rc.body), 401, "unauthorized", "unknown")
		if rc.server {
			wantError(t, f.do(t, a.Token, rc.method, rc.path, rc.body), 403, "forbidden", `workspace "alpha"`, "server's token")
		} else {
			wantError(t, f.do(t, b.Token, rc.method, rc.path, rc.body), 403, "forbidden", `"beta" does not reach workspace "alpha"`)
		}
		_ = name
	}
	// The owner's token and the server's reach every route of alpha.
	for _, who := range []struct{ name, token string }{{"owner", a.Token}, {"server", serverToken}} {
		for _, rc := range routeCases("alpha") {
			if rc.server && who.name == "owner" {
				continue
			}
			if rc.method == "DELETE" && !strings.Contains(rc.path, "/files/") && who.name == "owner" {
				continue // the server deletes it last
			}
			if rc.method == "POST" && rc.path == "/v1/workspaces" && who.name == "server" {
				rc.body = map[string]any{"name": "made-by-server"}
			}
			resp := f.do(t, who.token, rc.method, rc.path, rc.body)
			if resp.StatusCode == 401 || resp.StatusCode == 403 || resp.StatusCode >= 500 {
				t.Errorf("%s token: %s %s: %d %s", who.name, rc.method, rc.path, resp.StatusCode, readAll(t, resp))
			}
		}
	}
	// A deleted workspace's token is void.
	wantError(t, f.do(t, a.Token, "GET", "/v1/workspaces/alpha", nil), 401, "unauthorized")
	// A workspace token on a workspace that does not exist is 403, not 404:
	// it does not tell which names exist.
	wantError(t, f.do(t, b.Token, "GET", "/v1/workspaces/nope", nil), 403, "forbidden")
	if resp := f.do(t, "", "GET", "/v1/openapi.json", nil); resp.StatusCode != 200 {
		t.Errorf("openapi.json without a token: %d", resp.StatusCode)
	}
}

// Without a server token (dsh serve on loopback), a request without a
// token reaches everything, but a token that is sent must be known and
// reaches only its workspace.
func TestNoServerToken(t *testing.T) {
	f := newFixture(t, func(o *api.Options) { o.Token = "" })
	a := f.create(t, "")
	if !regexp.MustCompile(`^ws-[0-9a-f]{10}$`).MatchString(a.Workspace.Name) {
		t.Errorf("generated name %q", a.Workspace.Name)
	}
	f.create(t, "other")
	if resp := f.do(t, "", "GET", "/v1/workspaces", nil); resp.StatusCode != 200 {
		t.Errorf("list without a token on a tokenless server: %d", resp.StatusCode)
	}
	wantError(t, f.do(t, a.Token, "GET", "/v1/workspaces/other", nil), 403, "forbidden")
	wantError(t, f.do(t, a.Token, "GET", "/v1/workspaces", nil), 403, "forbidden")
	wantError(t, f.do(t, "bogus", "GET", "/v1/workspaces", nil), 401, "unauthorized")
}

func TestErrors(t *testing.T) {
	f := newFixture(t, nil)
	c := f.create(t, "alpha")
	wantError(t, f.do(t, serverToken, "GET", "/v1/workspaces/nope", nil), 404, "not_found", `"nope"`)
	wantError(t, f.do(t, serverToken, "POST", "/v1/workspaces", map[string]any{"name": "alpha"}), 409, "conflict", "alpha")
	wantError(t, f.do(t, serverToken, "POST", "/v1/workspaces", map[string]any{"driver": "vm"}), 400, "invalid", "vm")
	wantError(t, f.do(t, serverToken, "GET", "/v1/nothing", nil), 404, "not_found", "openapi.json")
	resp := f.do(t, serverToken, "PATCH", "/v1/workspaces/alpha", nil)
	if allow := resp.Header.Get("Allow"); !strings.Contains(allow, "GET") || !strings.Contains(allow, "DELETE") {
		t.Errorf("405 Allow %q", allow)
	}
	wantError(t, resp, 405, "not_found", "PATCH")
	for range 7 {
		f.create(t, "")
	}
	wantError(t, f.do(t, serverToken, "POST", "/v1/workspaces", nil), 429, "limit")
	// Paused: exec and files are 409.
	if resp := f.do(t, c.Token, "POST", "/v1/workspaces/alpha/pause", nil); resp.StatusCode != 200 {
		t.Fatalf("pause: %d", resp.StatusCode)
	}
	wantError(t, f.do(t, c.Token, "POST", "/v1/workspaces/alpha/exec", map[string]any{"argv": []string{"true"}}), 409, "conflict", "paused")
	wantError(t, f.do(t, c.Token, "GET", "/v1/workspaces/alpha/files/x", nil), 409, "conflict", "paused")
}

func TestValidation(t *testing.T) {
	f := newFixture(t, nil)
	f.create(t, "alpha")
	tok := serverToken
	for _, tc := range []struct {
		method, path string
		body         any
		status       int
		want         string
	}{
		{"GET", "/v1/workspaces/Bad_Name", nil, 400, "workspace name"},
		{"GET", "/v1/workspaces/" + strings.Repeat("a", 64), nil, 400, "workspace name"},
		{"POST", "/v1/workspaces", `{"name":"x","colour":"red"}`, 400, "colour"},
		{"POST", "/v1/workspaces", `{"name":"x"} {"name":"y"}`, 400, "one object"},
		{"POST", "/v1/workspaces", `{"name":`, 400, "JSON"},
		{"POST", "/v1/workspaces", `{"ttl":"soon"}`, 400, "soon"},
		{"POST", "/v1/workspaces", `{"ttl":"-1h"}`, 400, "negative"},
		{"POST", "/v1/workspaces", `{"name":"` + strings.Repeat("x", 5000) + `"}`, 413, "4096-byte"},
		{"POST", "/v1/workspaces/alpha/extend", `{}`, 400, "positive"},
		{"POST", "/v1/workspaces/alpha/extend", `{"by":"48h"}`, 400, "maximum"},
		{"POST", "/v1/workspaces/alpha/extend", ``, 400, "empty"},
		{"POST", "/v1/workspaces/alpha/exec", `{"argv":[]}`, 400, "argv is required"},
		{"POST", "/v1/workspaces/alpha/exec", `{"argv":["true"],"env":["NOEQUALS"]}`, 400, "KEY=VALUE"},
		{"POST", "/v1/workspaces/alpha/exec", `{"argv":["true"],"dir":"../x"}`, 400, "leaves the workspace"},
		{"POST", "/v1/workspaces/alpha/exec", `{"argv":["true"],"dir":"/etc"}`, 400, "absolute"},
		{"POST", "/v1/workspaces/alpha/exec", `{"argv":["true"],"timeout":"2h"}`, 400, "1h0m0s maximum"},
		{"POST", "/v1/workspaces/alpha/exec", `{"argv":["no-such-program-dsh"]}`, 400, "no-such-program-dsh"},
		{"GET", "/v1/workspaces/alpha/files/", nil, 400, "name a file"},
		{"GET", "/v1/workspaces/alpha/files/%2Fetc%2Fpasswd", nil, 400, ""},
		{"GET", "/v1/workspaces/alpha/files/a%2F..%2F..%2Fx", nil, 400, ""},
		{"GET", "/v1/workspaces/alpha/files/a/../../../beta/files/x", nil, 400, "clean"},
		{"GET", "/v1/workspaces/alpha/ls/..", nil, 400, ""},
		{"PUT", "/v1/workspaces/alpha/files/x?mode=999", "x", 400, "mode"},
		{"PUT", "/v1/workspaces/alpha/files/x?mode=01777", "x", 400, "mode"},
		{"PUT", "/v1/workspaces/alpha/files/big", strings.Repeat("x", 1025), 413, "1024-byte file limit"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			code := map[int]string{400: "invalid", 413: "too_large"}[tc.status]
			wantError(t, f.do(t, tok, tc.method, tc.path, tc.body), tc.status, code, tc.want)
		})
	}
	// Nothing of the refused writes reached the workspace.
	if entries, _ := os.ReadDir(filepath.Join(f.m.root, "alpha")); len(entries) != 0 {
		t.Errorf("refused requests left %v in the workspace", entries)
	}
	// A file over the cap is refused on read too, never cut.
	if err := os.WriteFile(filepath.Join(f.m.root, "alpha", "large"), bytes.Repeat([]byte("y"), 2000), 0o644); err != nil {
		t.Fatal(err)
	}
	wantError(t, f.do(t, tok, "GET", "/v1/workspaces/alpha/files/large", nil), 413, "too_large", "2000 bytes", "--max-file")
}

func TestFiles(t *testing.T) {
	f := newFixture(t, nil)
	c := f.create(t, "alpha")
	tok := c.Token
	p := "/v1/workspaces/alpha"
	if resp := f.do(t, tok, "PUT", p+"/files/sub/dir/a.sh?mode=0755", "#!/bin/sh\necho hi\n"); resp.StatusCode != 204 {
		t.Fatalf("PUT: %d %s", resp.StatusCode, readAll(t, resp))
	}
	st, err := os.Stat(filepath.Join(f.m.root, "alpha/sub/dir/a.sh"))
	if err != nil || st.Mode().Perm() != 0o755 {
		t.Fatalf("written file: %v %v", st, err)
	}
	resp := f.do(t, tok, "GET", p+"/files/sub/dir/a.sh", nil)
	if got := readAll(t, resp); resp.StatusCode != 200 || got != "#!/bin/sh\necho hi\n" || resp.Header.Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("GET: %d %q %s", resp.StatusCode, got, resp.Header.Get("Content-Type"))
	}
	bin := []byte{0, 1, 2, 255}
	f.do(t, tok, "PUT", p+"/files/sub/bin", bin)
	if got := readAll(t, f.do(t, tok, "GET", p+"/files/sub/bin", nil)); got != string(bin) {
		t.Errorf("binary round trip: %q", got)
	}
	resp = f.do(t, tok, "GET", p+"/ls/sub", nil)
	var l struct {
		Entries []workspace.Entry `json:"entries"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil || resp.StatusCode != 200 {
		t.Fatalf("ls: %d %v", resp.StatusCode, err)
	}
	if len(l.Entries) != 2 || l.Entries[0].Name != "bin" || l.Entries[0].Type != "file" || l.Entries[0].Size != 4 ||
		l.Entries[0].Mode != "0644" || l.Entries[1].Name != "dir" || l.Entries[1].Type != "dir" ||
		time.Since(l.Entries[0].MTime) > time.Minute {
		t.Errorf("ls sub: %+v", l.Entries)
	}
	resp = f.do(t, tok, "GET", p+"/ls/", nil)
	if body := readAll(t, resp); resp.StatusCode != 200 || !strings.Contains(body, `"name":"sub"`) {
		t.Errorf("ls of the root: %d %s", resp.StatusCode, body)
	}
	wantError(t, f.do(t, tok, "GET", p+"/files/sub", nil), 400, "invalid", "not a regular file")
	wantError(t, f.do(t, tok, "DELETE", p+"/files/sub/dir", nil), 409, "conflict")
	wantError(t, f.do(t, tok, "GET", p+"/files/missing", nil), 404, "not_found", "missing")
	wantError(t, f.do(t, tok, "GET", p+"/ls/missing", nil), 404, "not_found")
	// A symlink out of the workspace is refused by the world's FS.
	if err := os.Symlink("/etc", filepath.Join(f.m.root, "alpha/etc")); err != nil {
		t.Fatal(err)
	}
	wantError(t, f.do(t, tok, "GET", p+"/files/etc/passwd", nil), 400, "invalid", "outside the workspace")
	wantError(t, f.do(t, tok, "PUT", p+"/files/etc/x", "x"), 400, "invalid", "outside the workspace")
	for _, q := range []string{"/files/sub/dir/a.sh", "/files/sub/dir", "/files/sub/bin", "/files/etc"} {
		if resp := f.do(t, tok, "DELETE", p+q, nil); resp.StatusCode != 204 {
			t.Errorf("DELETE %s: %d %s", q, resp.StatusCode, readAll(t, resp))
		}
	}
	if _, err := os.Stat("/etc/passwd"); err != nil {
		t.Fatal(err)
	}
	if f.m.borrowed.Load() != 0 {
		t.Errorf("%d worlds not given back", f.m.borrowed.Load())
	}
}

// events reads an exec's NDJSON answer.
func events(t *testing.T, r io.Reader) []workspace.ExecEvent {
	t.Helper()
	var evs []workspace.ExecEvent
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var ev workspace.ExecEvent
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		evs = append(evs, ev)
	}
	return evs
}

func TestExecStreams(t *testing.T) {
	f := newFixture(t, nil)
	c := f.create(t, "alpha")
	resp := f.do(t, c.Token, "POST", "/v1/workspaces/alpha/exec", map[string]any{
		"argv": []string{"sh", "-c", "cat; echo out; echo err >&2; mkdir -p d; cd d && pwd >&2; echo $K; exit 3"},
		"env":  []string{"K=V"}, "stdin": []byte("in\n"),
	})
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("exec: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	evs := events(t, resp.Body)
	var out, errOut string
	for _, ev := range evs[:len(evs)-1] {
		if ev.Exit != nil || ev.Error != nil {
			t.Fatalf("an exit or error before the last line: %+v", evs)
		}
		out += string(ev.Stdout)
		errOut += string(ev.Stderr)
	}
	last := evs[len(evs)-1]
	if last.Exit == nil || last.Exit.Code != 3 {
		t.Fatalf("last event %+v, want exit 3", last)
	}
	if out != "in\nout\nV\n" || !strings.HasPrefix(errOut, "err\n") || !strings.HasSuffix(errOut, "/alpha/d\n") {
		t.Errorf("stdout %q stderr %q", out, errOut)
	}

	// dir and a signal.
	resp = f.do(t, c.Token, "POST", "/v1/workspaces/alpha/exec", map[string]any{"argv": []string{"sh", "-c", "pwd; kill -KILL $$"}, "dir": "d"})
	evs = events(t, resp.Body)
	if ex := evs[len(evs)-1].Exit; ex == nil || ex.Code != 137 || ex.Signal != "SIGKILL" || !strings.HasSuffix(string(evs[0].Stdout), "/alpha/d\n") {
		t.Errorf("dir and signal: %+v", evs)
	}
	// timeout
	resp = f.do(t, c.Token, "POST", "/v1/workspaces/alpha/exec", map[string]any{"argv": []string{"sleep", "30"}, "timeout": "200ms"})
	if evs = events(t, resp.Body); evs[len(evs)-1].Exit == nil || evs[len(evs)-1].Exit.Code != 124 {
		t.Errorf("timeout: %+v", evs)
	}
	if f.m.borrowed.Load() != 0 {
		t.Errorf("%d worlds not given back", f.m.borrowed.Load())
	}
}

// Output arrives as it is printed, not at the end: the first line is read
// while the command still waits for a file the test writes after reading.
func TestExecFlushesPerEvent(t *testing.T) {
	f := newFixture(t, nil)
	c := f.create(t, "alpha")
	resp := f.do(t, c.Token, "POST", "/v1/workspaces/alpha/exec", map[string]any{
		"argv": []string{"sh", "-c", "echo first; while [ ! -e go ]; do sleep 0.05; done; echo second"}, "timeout": "20s",
	})
	br := bufio.NewReader(resp.Body)
	line, err := readLine(br, 10*time.Second)
	if err != nil {
		t.Fatalf("no first event while the command runs: %v", err)
	}
	var ev workspace.ExecEvent
	if json.Unmarshal(line, &ev); string(ev.Stdout) != "first\n" {
		t.Fatalf("first event %s", line)
	}
	if err := os.WriteFile(filepath.Join(f.m.root, "alpha", "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	evs := events(t, br)
	if len(evs) != 2 || string(evs[0].Stdout) != "second\n" || evs[1].Exit == nil || evs[1].Exit.Code != 0 {
		t.Errorf("after the file: %+v", evs)
	}
}

func readLine(br *bufio.Reader, d time.Duration) ([]byte, error) {
	type res struct {
		b   []byte
		err error
	}
	ch := make(chan res, 1)
	go func() { b, err := br.ReadBytes('\n'); ch <- res{b, err} }()
	select {
	case r := <-ch:
		return r.b, r.err
	case <-time.After(d):
		return nil, context.DeadlineExceeded
	}
}

// A client that goes away stops the command: its process is gone soon.
func TestExecDisconnectStopsTheCommand(t *testing.T) {
	f := newFixture(t, nil)
	f.create(t, "alpha")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	body, _ := json.Marshal(map[string]any{"argv": []string{"sh", "-c", "echo $$ > pid; echo started; exec sleep 300"}})
	req, _ := http.NewRequestWithContext(ctx, "POST", f.srv.URL+"/v1/workspaces/alpha/exec", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+serverToken)
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := readLine(bufio.NewReader(resp.Body), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	pid, err := os.ReadFile(filepath.Join(f.m.root, "alpha", "pid"))
	if err != nil {
		t.Fatal(err)
	}
	proc := "/proc/" + strings.TrimSpace(string(pid))
	if _, err := os.Stat(proc); err != nil {
		t.Fatalf("the command is not running: %v", err)
	}
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := os.ReadFile(proc + "/stat")
		if err != nil || strings.Contains(string(st), ") Z ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command still runs 10s after its client went away")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for deadline := time.Now().Add(5 * time.Second); f.m.borrowed.Load() != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the world was not given back after the disconnect")
		}
	}
}

func TestLifecycle(t *testing.T) {
	f := newFixture(t, nil)
	c := f.create(t, "alpha")
	if c.Token == "" || c.Workspace.Name != "alpha" || c.Workspace.State != "running" {
		t.Fatalf("created %+v", c)
	}
	decode := func(resp *http.Response) workspace.Workspace {
		t.Helper()
		var ws workspace.Workspace
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", resp.Request.URL.Path, resp.StatusCode, readAll(t, resp))
		}
		json.NewDecoder(resp.Body).Decode(&ws)
		return ws
	}
	if ws := decode(f.do(t, c.Token, "POST", "/v1/workspaces/alpha/extend", map[string]any{"by": "5h"})); time.Until(ws.ExpiresAt) < 4*time.Hour {
		t.Errorf("extend: expires %v", ws.ExpiresAt)
	}
	if ws := decode(f.do(t, c.Token, "POST", "/v1/workspaces/alpha/pause", nil)); ws.State != "paused" {
		t.Errorf("pause: %s", ws.State)
	}
	if ws := decode(f.do(t, c.Token, "POST", "/v1/workspaces/alpha/resume", nil)); ws.State != "running" {
		t.Errorf("resume: %s", ws.State)
	}
	resp := f.do(t, serverToken, "GET", "/v1/workspaces", nil)
	var l struct{ Workspaces []workspace.Workspace }
	json.NewDecoder(resp.Body).Decode(&l)
	if len(l.Workspaces) != 1 || l.Workspaces[0].Name != "alpha" {
		t.Errorf("list: %+v", l)
	}
	if resp := f.do(t, c.Token, "DELETE", "/v1/workspaces/alpha", nil); resp.StatusCode != 204 {
		t.Fatalf("delete: %d", resp.StatusCode)
	}
	wantError(t, f.do(t, serverToken, "GET", "/v1/workspaces/alpha", nil), 404, "not_found")
}

// Every route the API serves is in the OpenAPI document, and every path
// and method of the document is served.
func TestOpenAPICoversTheRoutes(t *testing.T) {
	f := newFixture(t, nil)
	resp := f.do(t, "", "GET", "/v1/openapi.json", nil)
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || doc.OpenAPI != "3.1.0" {
		t.Fatalf("document: %v %q", err, doc.OpenAPI)
	}
	var documented []string
	for p, ops := range doc.Paths {
		for m := range ops {
			if m == "parameters" {
				continue
			}
			documented = append(documented, strings.ToUpper(m)+" "+p)
		}
	}
	served := api.Routes()
	slices.Sort(documented)
	slices.Sort(served)
	if !slices.Equal(documented, served) {
		t.Errorf("documented and served routes differ:\ndocumented %q\nserved     %q", documented, served)
	}
	// And the mux serves them: a route of the table never answers the
	// API's "no route" 404.
	for _, r := range served {
		m, p, _ := strings.Cut(r, " ")
		p = strings.NewReplacer("{name}", "nope", "{path}", "x").Replace(p)
		resp := f.do(t, serverToken, m, p, nil)
		if body := readAll(t, resp); strings.Contains(body, "no route") || resp.StatusCode == 405 {
			t.Errorf("%s %s is documented but not served: %d %s", m, p, resp.StatusCode, body)
		}
	}
}

// The answer's header comes when the command starts, not with its first
// output: a client of a quiet command knows that it runs.
func TestExecAnswersBeforeOutput(t *testing.T) {
	f := newFixture(t, nil)
	f.create(t, "alpha")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", f.srv.URL+"/v1/workspaces/alpha/exec", strings.NewReader(`{"argv":["sleep","30"]}`))
	req.Header.Set("Authorization", "Bearer "+serverToken)
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatalf("no answer while a quiet command runs: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

// A client that keeps the connection but stops reading does not hold
// the command, nor the workspace's world, until the command's timeout.
func TestExecStalledClientStopsTheCommand(t *testing.T) {
	api.SetWriteStall(t, 300*time.Millisecond)
	f := newFixture(t, nil)
	f.create(t, "alpha")
	body, _ := json.Marshal(map[string]any{"argv": []string{"sh", "-c", "echo $$ > pid; exec yes"}, "timeout": "1h"})
	req, _ := http.NewRequest("POST", f.srv.URL+"/v1/workspaces/alpha/exec", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+serverToken)
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close() // never read: the client stalls
	var pid []byte
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if pid, err = os.ReadFile(filepath.Join(f.m.root, "alpha", "pid")); err == nil && len(pid) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command did not start")
		}
	}
	proc := "/proc/" + strings.TrimSpace(string(pid))
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		st, err := os.ReadFile(proc + "/stat")
		if err != nil || strings.Contains(string(st), ") Z ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command still runs 20s after its client stopped reading")
		}
	}
	for deadline := time.Now().Add(5 * time.Second); f.m.borrowed.Load() != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the world was not given back after the stall")
		}
	}
}
