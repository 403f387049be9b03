package lsp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/execworld/execworldtest"
)

// The line the tests ask about: a two-byte and a non-BMP character
// before the symbol, so code points, bytes and UTF-16 units all differ.
const srcLine = `x := "é😀"; Sym()`

// symCol is the 1-based code-point column of Sym on srcLine.
var symCol = len([]rune(srcLine[:strings.Index(srcLine, "Sym")])) + 1

type harness struct {
	t      *testing.T
	w      *execworld.World
	c      *Client
	dir    string // the fake's record directory
	ws     string // the world's workspace
	opts   *Options
	server ServerConfig
}

// newHarness opens a fake world and a Client whose one server is the
// fake in modes, for files ending .fake.
func newHarness(t *testing.T, modes string, tweak ...func(*ServerConfig, *Options)) *harness {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	w, _ := execworldtest.NewWorld(t, nil)
	h := &harness{t: t, w: w, dir: t.TempDir(), ws: w.FS.Root()}
	h.server = ServerConfig{
		ID: "fake", Command: exe,
		Env:        []string{"FAKE_LSP=1", "FAKE_LSP_MODE=" + modes, "FAKE_LSP_DIR=" + h.dir},
		Extensions: map[string]string{".fake": "fake"},
		Settings:   map[string]any{"fake": map[string]any{"sub": map[string]any{"x": 1}}},
		KillGrace:  300 * time.Millisecond,
	}
	h.opts = &Options{BackoffInitial: 10 * time.Millisecond}
	for _, f := range tweak {
		f(&h.server, h.opts)
	}
	h.opts.Servers = []ServerConfig{h.server}
	h.c, err = New(w, h.opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.c.Close() })
	h.write("a.fake", "package a\n"+srcLine+"\n")
	return h
}

func withEnv(k, v string) func(*ServerConfig, *Options) {
	return func(s *ServerConfig, _ *Options) { s.Env = append(s.Env, k+"="+v) }
}

func (h *harness) write(name, content string) {
	h.t.Helper()
	p := filepath.Join(h.ws, name)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) query(op Operation) (*Result, error) {
	return h.c.Query(context.Background(), Query{Op: op, File: "a.fake", Line: 2, Column: symCol})
}

// starts are the pids of the fake servers started so far.
func (h *harness) starts() []int {
	b, _ := os.ReadFile(filepath.Join(h.dir, "starts"))
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		n, _ := strconv.Atoi(f)
		pids = append(pids, n)
	}
	return pids
}

type received struct {
	PID int     `json:"pid"`
	Msg message `json:"msg"`
}

func (h *harness) received() []received {
	return readJSONL[received](h.t, filepath.Join(h.dir, "received.jsonl"))
}

func readJSONL[T any](t *testing.T, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, v)
	}
	return out
}

func (h *harness) methods() []string {
	var out []string
	for _, r := range h.received() {
		out = append(out, r.Msg.Method)
	}
	return out
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func wantCode(t *testing.T, err error, want Code) {
	t.Helper()
	if got := CodeOf(err); got != want {
		t.Fatalf("error = %v (code %v), want code %v", err, got, want)
	}
}

func TestQueryConvertsColumnsAndFollowsTheSequence(t *testing.T) {
	h := newHarness(t, "")
	res, err := h.query(Definition)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Locations) != 1 {
		t.Fatalf("locations = %+v, want one", res.Locations)
	}
	l := res.Locations[0]
	// The fake echoes the position; converted back it is the column asked.
	if l.Rel != "a.fake" || l.Line != 2 || l.Column != symCol || l.EndColumn != symCol+2 || l.UTF16 {
		t.Errorf("location = %+v, want a.fake:2:%d-%d in code points", l, symCol, symCol+2)
	}
	var sawInit, sawDef bool
	for _, r := range h.received() {
		switch r.Msg.Method {
		case "initialize":
			sawInit = true
			var p map[string]any
			json.Unmarshal(r.Msg.Params, &p)
			if v, ok := p["processId"]; !ok || v != nil {
				t.Errorf("initialize processId = %v (present %v), want null", v, ok)
			}
			enc := p["capabilities"].(map[string]any)["general"].(map[string]any)["positionEncodings"]
			if b, _ := json.Marshal(enc); string(b) != `["utf-16"]` {
				t.Errorf("positionEncodings = %s, want [\"utf-16\"]", b)
			}
			folders, _ := json.Marshal(p["workspaceFolders"])
			if want := `[{"name":"workspace","uri":"` + fileURI(h.ws) + `"}]`; string(folders) != want {
				t.Errorf("workspaceFolders = %s, want %s", folders, want)
			}
		case "textDocument/definition":
			sawDef = true
			var p textDocumentPositionParams
			json.Unmarshal(r.Msg.Params, &p)
			// é is one UTF-16 unit, 😀 two: UTF-16 column = code points + 1.
			if want := symCol - 1 + 1; p.Position.Character != want || p.Position.Line != 1 {
				t.Errorf("definition position = %+v, want line 1 character %d (UTF-16)", p.Position, want)
			}
		}
	}
	if !sawInit || !sawDef {
		t.Fatalf("received %v, want initialize and definition", h.methods())
	}
	h.c.Close() // the fake records asynchronously; shutdown orders it
	got := strings.Join(h.methods(), " ")
	if want := "initialize initialized textDocument/didOpen textDocument/definition textDocument/didClose shutdown exit"; got != want {
		t.Errorf("messages = %s, want %s", got, want)
	}
}

func TestReferencesIncludeTheDeclaration(t *testing.T) {
	h := newHarness(t, "")
	if _, err := h.query(References); err != nil {
		t.Fatal(err)
	}
	for _, r := range h.received() {
		if r.Msg.Method == "textDocument/references" {
			var p referenceParams
			json.Unmarshal(r.Msg.Params, &p)
			if !p.Context.IncludeDeclaration {
				t.Errorf("references context = %s, want includeDeclaration true", r.Msg.Params)
			}
			return
		}
	}
	t.Fatalf("no references request in %v", h.methods())
}

func TestServerRequestsAreAnswered(t *testing.T) {
	h := newHarness(t, "ask-config")
	if _, err := h.query(Hover); err != nil {
		t.Fatal(err)
	}
	c := h.c
	c.Close() // the fake logs answers asynchronously; shutdown orders it
	type answer struct {
		Method string
		Answer message
	}
	got := map[string]string{}
	for _, a := range readJSONL[answer](t, filepath.Join(h.dir, "answers.jsonl")) {
		if a.Answer.Error != nil {
			got[a.Method] = "error " + strconv.FormatInt(a.Answer.Error.Code, 10)
		} else {
			got[a.Method] = string(a.Answer.Result)
		}
	}
	want := map[string]string{
		"workspace/configuration":        `[{"x":1},null]`,
		"client/registerCapability":      "null",
		"window/workDoneProgress/create": "null",
		"workspace/applyEdit":            "error -32601",
	}
	for m, w := range want {
		if got[m] != w {
			t.Errorf("answer to %s = %q, want %q", m, got[m], w)
		}
	}
}

func TestMalformedResults(t *testing.T) {
	loc := func(start string) string {
		return `{"uri":"$URI","range":{"start":` + start + `,"end":{"line":1,"character":3}}}`
	}
	for _, tc := range []struct {
		name, result string
		want         Code
		n            int
	}{
		{"null", `null`, 0, 0},
		{"empty", `[]`, 0, 0},
		{"location", loc(`{"line":1,"character":2}`), 0, 1},
		{"link", `[{"targetUri":"$URI","targetRange":{"start":{"line":0,"character":0},"end":{"line":1,"character":9}},"targetSelectionRange":{"start":{"line":1,"character":$CHAR},"end":{"line":1,"character":$END}}}]`, 0, 1},
		{"negative", loc(`{"line":-1,"character":2}`), CodeMalformedResponse, 0},
		{"fractional", loc(`{"line":1,"character":2.5}`), CodeMalformedResponse, 0},
		{"no uri", `[{"range":{"start":{"line":1,"character":1},"end":{"line":1,"character":1}}}]`, CodeMalformedResponse, 0},
		{"no range", `[{"uri":"$URI"}]`, CodeMalformedResponse, 0},
		{"string", `"here"`, CodeMalformedResponse, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, "", withEnv("FAKE_LSP_RESULT", tc.result))
			res, err := h.query(Definition)
			if tc.want != 0 {
				wantCode(t, err, tc.want)
				if n := len(h.starts()); n != 1 {
					t.Errorf("%d server starts, want 1: a malformed result is not retried", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Locations) != tc.n {
				t.Errorf("locations = %+v, want %d", res.Locations, tc.n)
			}
			if tc.name == "link" && res.Locations[0].Column != symCol {
				t.Errorf("link location = %+v, want its targetSelectionRange at column %d", res.Locations[0], symCol)
			}
		})
	}
}

func TestHoverContents(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`null`, ""},
		{`{"contents":{"kind":"markdown","value":"**F**"}}`, "**F**"},
		{`{"contents":"plain"}`, "plain"},
		{`{"contents":{"language":"go","value":"func F()"}}`, "```go\nfunc F()\n```"},
		{`{"contents":["a",{"language":"go","value":"b"},""]}`, "a\n\n```go\nb\n```"},
		{`{"contents":[]}`, ""},
		{`{"contents":{"kind":"plaintext","value":"  "}}`, ""},
	} {
		got, err := parseHover(json.RawMessage(tc.in))
		if err != nil || got != tc.want {
			t.Errorf("parseHover(%s) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if _, err := parseHover(json.RawMessage(`{"contents":42}`)); CodeOf(err) != CodeMalformedResponse {
		t.Errorf("parseHover(contents 42) error = %v, want LSP_MALFORMED_RESPONSE", err)
	}
	h := newHarness(t, "", withEnv("FAKE_LSP_HOVER", `null`))
	res, err := h.query(Hover)
	if err != nil || res.HasHover || Render(res, nil) != "No hover information." {
		t.Errorf("null hover = %+v, %v; want no hover information", res, err)
	}
}

func TestCancelSendsCancelRequest(t *testing.T) {
	h := newHarness(t, "hang", func(s *ServerConfig, _ *Options) { s.RequestTimeout = 200 * time.Millisecond })
	_, err := h.query(Definition)
	wantCode(t, err, CodeTimeout)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err = h.c.Query(ctx, Query{Op: Definition, File: "a.fake", Line: 2, Column: 1})
	wantCode(t, err, CodeAborted)
	var cancels []string
	var defIDs []string
	for _, r := range h.received() {
		switch r.Msg.Method {
		case "$/cancelRequest":
			var p struct{ ID json.RawMessage }
			json.Unmarshal(r.Msg.Params, &p)
			cancels = append(cancels, string(p.ID))
		case "textDocument/definition":
			defIDs = append(defIDs, string(r.Msg.ID))
		}
	}
	if strings.Join(cancels, ",") != strings.Join(defIDs, ",") || len(cancels) != 2 {
		t.Errorf("$/cancelRequest ids = %v, want the definition ids %v", cancels, defIDs)
	}
	// The server answered the cancellations: it stays.
	if n := len(h.starts()); n != 1 {
		t.Errorf("%d starts, want 1: a server that honours $/cancelRequest is kept", n)
	}
}

func TestServerIgnoringCancelIsReplaced(t *testing.T) {
	h := newHarness(t, "hang-ignore-cancel", func(s *ServerConfig, _ *Options) { s.RequestTimeout = 100 * time.Millisecond })
	_, err := h.query(Definition)
	wantCode(t, err, CodeTimeout)
	first := h.starts()
	if len(first) != 1 || alive(first[0]) {
		t.Fatalf("starts %v: the server that ignored $/cancelRequest must be gone", first)
	}
	_, err = h.query(Definition)
	wantCode(t, err, CodeTimeout)
	if n := len(h.starts()); n != 2 {
		t.Errorf("%d starts, want 2 (a fresh process for the next query)", n)
	}
}

func TestTransportFailureRetriedOnceOnAFreshProcess(t *testing.T) {
	h := newHarness(t, "crash-once")
	res, err := h.query(Definition)
	if err != nil {
		t.Fatalf("query after one crash: %v, want the answer of the fresh process", err)
	}
	if len(res.Locations) != 1 {
		t.Errorf("locations = %+v", res.Locations)
	}
	if pids := h.starts(); len(pids) != 2 || alive(pids[0]) {
		t.Errorf("starts %v, want 2, the first gone", pids)
	}
}

func TestTransportFailureRetriedOnlyOnce(t *testing.T) {
	h := newHarness(t, "crash-always")
	_, err := h.query(Definition)
	wantCode(t, err, CodeServerFailed)
	if !strings.Contains(err.Error(), "crashing on every query") {
		t.Errorf("error %q lacks the stderr tail", err)
	}
	if n := len(h.starts()); n != 2 {
		t.Errorf("%d starts, want 2 (one retry)", n)
	}
}

func TestServerErrorIsNotRetried(t *testing.T) {
	h := newHarness(t, "server-error")
	_, err := h.query(Definition)
	wantCode(t, err, CodeServerError)
	if !strings.Contains(err.Error(), "internal boom") {
		t.Errorf("error %q lacks the server's message", err)
	}
	n := 0
	for _, m := range h.methods() {
		if m == "textDocument/definition" {
			n++
		}
	}
	if n != 1 || len(h.starts()) != 1 {
		t.Errorf("%d definition requests on %d starts, want 1 on 1", n, len(h.starts()))
	}
}

func TestContentModifiedIsRetried(t *testing.T) {
	h := newHarness(t, "content-modified-once")
	if _, err := h.query(Definition); err != nil {
		t.Fatalf("query: %v, want the answer after one ContentModified", err)
	}
	h2 := newHarness(t, "content-modified-always")
	_, err := h2.query(Definition)
	wantCode(t, err, CodeServerError)
	n := 0
	for _, m := range h2.methods() {
		if m == "textDocument/definition" {
			n++
		}
	}
	if n != 1+contentModifiedRetries {
		t.Errorf("%d definition requests, want %d (bounded retries)", n, 1+contentModifiedRetries)
	}
}

func TestFramingFailuresEndTheProcess(t *testing.T) {
	for _, mode := range []string{"huge-header", "huge-body", "bad-json"} {
		t.Run(mode, func(t *testing.T) {
			h := newHarness(t, mode, func(s *ServerConfig, _ *Options) { s.MaxMessageBytes = 1000 })
			_, err := h.query(Definition)
			wantCode(t, err, CodeServerFailed)
			if !errors.Is(err, errFraming) {
				t.Errorf("error %v does not wrap the framing error", err)
			}
			pids := h.starts()
			if len(pids) != 2 {
				t.Errorf("starts %v, want 2 (one retry)", pids)
			}
			for _, p := range pids {
				if alive(p) {
					t.Errorf("server %d still runs after a framing error", p)
				}
			}
		})
	}
}

func TestReadinessCapAnswersIndexing(t *testing.T) {
	h := newHarness(t, "progress-forever", func(s *ServerConfig, _ *Options) {
		s.Readiness = Readiness{Kind: ReadyProgress, Timeout: 300 * time.Millisecond}
	})
	start := time.Now()
	_, err := h.query(Definition)
	wantCode(t, err, CodeIndexing)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("indexing answer took %v", d)
	}
	if st := h.c.Status(context.Background()); len(st) != 1 || st[0].State != StateIndexing {
		t.Errorf("status = %+v, want indexing", st)
	}
	h2 := newHarness(t, "progress-ends", func(s *ServerConfig, _ *Options) {
		s.Readiness = Readiness{Kind: ReadyProgress, Timeout: 5 * time.Second}
	})
	if _, err := h2.query(Definition); err != nil {
		t.Errorf("query after progress ended: %v", err)
	}
}

func TestCrashLoopIsBackedOffAndReported(t *testing.T) {
	h := newHarness(t, "exit-at-start", func(_ *ServerConfig, o *Options) { o.BackoffMax = time.Minute })
	_, err := h.query(Definition)
	wantCode(t, err, CodeServerFailed)
	for _, want := range []string{"exited (exit status 3)", "cannot load workspace: boom"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if n := len(h.starts()); n != 2 {
		t.Errorf("%d starts, want 2", n)
	}
	_, err = h.query(Definition)
	wantCode(t, err, CodeServerFailed)
	_, err = h.query(Definition)
	wantCode(t, err, CodeServerFailed)
	if !strings.Contains(err.Error(), "3 times in a row") || !strings.Contains(err.Error(), "boom") {
		t.Errorf("error %q: want the failure count and the stderr tail", err)
	}
	if n := len(h.starts()); n != 3 {
		t.Errorf("%d starts, want 3 (the budget), then no more", n)
	}
	st := h.c.Status(context.Background())
	if len(st) != 1 || st[0].State != StateFailed || !strings.Contains(st[0].Why, "boom") {
		t.Errorf("status = %+v, want failed with the stderr tail", st)
	}
}

func TestUnsupportedOperationAndEncoding(t *testing.T) {
	h := newHarness(t, "no-impl")
	_, err := h.query(Implementation)
	wantCode(t, err, CodeUnsupportedOperation)
	h2 := newHarness(t, "utf8")
	_, err = h2.query(Definition)
	wantCode(t, err, CodeUnavailable)
	if n := len(h2.starts()); n != 1 {
		t.Errorf("%d starts, want 1: a wrong encoding is not retried", n)
	}
}

func TestFilesAreCheckedBeforeAnyStart(t *testing.T) {
	h := newHarness(t, "")
	h.write("bin.fake", "a\x00b")
	h.write("big.fake", strings.Repeat("x", 2000))
	os.Mkdir(filepath.Join(h.ws, "dir.fake"), 0o755)
	outside := filepath.Join(t.TempDir(), "o.fake")
	os.WriteFile(outside, []byte("x"), 0o644)
	os.Symlink(outside, filepath.Join(h.ws, "link.fake"))
	h.c.Close()
	h.opts.Servers[0].MaxDocumentBytes = 1000
	c, err := New(h.w, h.opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tc := range []struct {
		file string
		want Code
	}{
		{"missing.fake", CodeInvalidFile},
		{"bin.fake", CodeInvalidFile},
		{"big.fake", CodeInvalidFile},
		{"dir.fake", CodeInvalidFile},
		{"link.fake", CodeInvalidFile},
		{outside, CodeInvalidFile},
		{"../x.fake", CodeInvalidFile},
		{"a.txt", CodeUnavailable},
		{".fake", CodeUnavailable},
	} {
		_, err := c.Query(context.Background(), Query{Op: Definition, File: tc.file, Line: 1, Column: 1})
		if CodeOf(err) != tc.want {
			t.Errorf("Query(%s) error = %v, want %v", tc.file, err, tc.want)
		}
	}
	for _, pos := range [][2]int{{9, 1}, {2, 40}, {0, 1}} {
		_, err := c.Query(context.Background(), Query{Op: Definition, File: "a.fake", Line: pos[0], Column: pos[1]})
		if CodeOf(err) != CodeInvalidPosition {
			t.Errorf("Query(a.fake:%d:%d) error = %v, want LSP_INVALID_POSITION", pos[0], pos[1], err)
		}
	}
	if n := len(h.starts()); n != 0 {
		t.Errorf("%d server starts, want none for rejected files", n)
	}
}

func TestCloseLeavesNothingRunning(t *testing.T) {
	h := newHarness(t, "")
	if _, err := h.query(Hover); err != nil {
		t.Fatal(err)
	}
	if err := h.c.Close(); err != nil {
		t.Fatal(err)
	}
	pids := h.starts()
	if len(pids) != 1 || alive(pids[0]) {
		t.Errorf("starts %v: the server must be gone after Close", pids)
	}
	if ms := h.methods(); len(ms) < 2 || ms[len(ms)-2] != "shutdown" || ms[len(ms)-1] != "exit" {
		t.Errorf("messages %v, want shutdown and exit last", ms)
	}
	if err := h.c.Close(); !errors.Is(err, execworld.ErrClosed) {
		t.Errorf("second Close = %v, want ErrClosed", err)
	}
	_, err := h.query(Hover)
	wantCode(t, err, CodeUnavailable)
}

func TestCloseKillsAServerIgnoringShutdown(t *testing.T) {
	h := newHarness(t, "no-shutdown", func(s *ServerConfig, _ *Options) { s.ShutdownTimeout = 200 * time.Millisecond })
	if _, err := h.query(Hover); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	h.c.Close()
	if pids := h.starts(); alive(pids[0]) {
		t.Errorf("server %d still runs after Close", pids[0])
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Close took %v", d)
	}
}

func TestCommandNotFound(t *testing.T) {
	h := newHarness(t, "", func(s *ServerConfig, _ *Options) { s.Command = "dsh-no-such-server" })
	_, err := h.query(Definition)
	wantCode(t, err, CodeUnavailable)
	if !strings.Contains(err.Error(), "dsh-no-such-server is not found in the world") {
		t.Errorf("error %q", err)
	}
}

func TestCloseDuringAQuery(t *testing.T) {
	h := newHarness(t, "hang", func(s *ServerConfig, _ *Options) { s.ShutdownTimeout = 200 * time.Millisecond })
	done := make(chan error, 1)
	go func() { _, err := h.query(Definition); done <- err }()
	for deadline := time.Now().Add(5 * time.Second); len(h.starts()) == 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // the request is pending
	h.c.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("query answered although the client closed under it")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("query still waits after Close")
	}
	pids := h.starts()
	if len(pids) != 1 {
		t.Errorf("starts %v, want 1: no fresh process after Close", pids)
	}
	for _, p := range pids {
		if alive(p) {
			t.Errorf("server %d runs after Close", p)
		}
	}
}

func TestReadinessGates(t *testing.T) {
	for _, tc := range []struct {
		mode string
		r    Readiness
		want Code
	}{
		{"log-ready", Readiness{Kind: ReadyLog, Pattern: `Found \d+ source files?`, Timeout: 5 * time.Second}, 0},
		{"", Readiness{Kind: ReadyLog, Pattern: `Found \d+ source files?`, Timeout: 300 * time.Millisecond}, CodeIndexing},
		{"quiescent", Readiness{Kind: ReadyQuiescent, Timeout: 5 * time.Second}, 0},
		{"", Readiness{Kind: ReadyQuiescent, Timeout: 300 * time.Millisecond}, CodeIndexing},
		// Work that begins only after the short settle is still waited for.
		{"progress-late", Readiness{Kind: ReadyProgress, Timeout: 6 * time.Second}, 0},
		// A progress-gated server that begins no work is indexing until
		// the cap (an answer before its work begins may be wrong); see
		// TestProgressGateWithoutProgress for what follows.
		{"", Readiness{Kind: ReadyProgress, Timeout: 300 * time.Millisecond}, CodeIndexing},
	} {
		t.Run(tc.mode+"/"+tc.r.Kind.String(), func(t *testing.T) {
			h := newHarness(t, tc.mode, func(s *ServerConfig, _ *Options) { s.Readiness = tc.r })
			res, err := h.query(Definition)
			if CodeOf(err) != tc.want {
				t.Errorf("query = %v, want code %v", err, tc.want)
			}
			if err == nil && len(res.Locations) != 1 {
				t.Errorf("locations = %+v: asked before the server was ready", res.Locations)
			}
		})
	}
}

func TestNotFoundNamesTheImage(t *testing.T) {
	h := newHarness(t, "", func(s *ServerConfig, _ *Options) { s.Command, s.Image = "dsh-no-such-server", "dsh/go:latest" })
	_, err := h.query(Definition)
	if !strings.Contains(err.Error(), "--image dsh/go:latest") {
		t.Errorf("error %q does not name the image that has the server", err)
	}
}

// TestProgressGateWithoutProgress: a progress-gated server that begins no
// work answers LSP_INDEXING at the cap once, and from then on counts as
// one that reports no progress: the next query is answered.
func TestProgressGateWithoutProgress(t *testing.T) {
	h := newHarness(t, "", func(s *ServerConfig, _ *Options) {
		s.Readiness = Readiness{Kind: ReadyProgress, Timeout: 300 * time.Millisecond}
	})
	if _, err := h.query(Definition); CodeOf(err) != CodeIndexing {
		t.Fatalf("first query = %v, want %v", err, CodeIndexing)
	}
	res, err := h.query(Definition)
	if err != nil || len(res.Locations) != 1 {
		t.Fatalf("second query = %+v, %v; want its answer", res, err)
	}
}
