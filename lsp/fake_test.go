package lsp

// The fake language server: the test binary re-run with FAKE_LSP=1.
// FAKE_LSP_MODE is a comma-separated list of behaviours; FAKE_LSP_DIR is
// where it appends what it received (received.jsonl, one line per
// message with its pid) and its starts (starts, one pid a line), and
// keeps markers across processes.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	if os.Getenv("FAKE_LSP") == "1" {
		os.Exit(runFake())
	}
	os.Exit(m.Run())
}

type fake struct {
	modes  map[string]bool
	dir    string
	in     *bufio.Reader
	wmu    sync.Mutex
	out    io.Writer
	nextID int
	defs   int
	// answers to our own requests, by id
	mu      sync.Mutex
	asked   map[string]string // method of our requests, by id
	hanging map[string]bool
	loaded  bool // progress-late: the "project" has loaded
}

func runFake() int {
	f := &fake{modes: map[string]bool{}, dir: os.Getenv("FAKE_LSP_DIR"), in: bufio.NewReader(os.Stdin), out: os.Stdout,
		asked: map[string]string{}, hanging: map[string]bool{}}
	for _, m := range strings.Split(os.Getenv("FAKE_LSP_MODE"), ",") {
		f.modes[m] = true
	}
	f.appendFile("starts", strconv.Itoa(os.Getpid()))
	if f.modes["exit-at-start"] {
		fmt.Fprintln(os.Stderr, "fake: loading the workspace")
		fmt.Fprintln(os.Stderr, "fake: cannot load workspace: boom")
		return 3
	}
	for {
		body, err := f.read()
		if err != nil {
			return 0
		}
		var m message
		if json.Unmarshal(body, &m) != nil {
			return 4
		}
		f.appendFile("received.jsonl", fmt.Sprintf(`{"pid":%d,"msg":%s}`, os.Getpid(), body))
		if m.Method == "" {
			f.mu.Lock()
			method := f.asked[string(m.ID)]
			f.mu.Unlock()
			f.appendFile("answers.jsonl", fmt.Sprintf(`{"method":%q,"answer":%s}`, method, body))
			continue
		}
		if exit := f.handle(m); exit >= 0 {
			return exit
		}
	}
}

func (f *fake) appendFile(name, line string) {
	if f.dir == "" {
		return
	}
	fl, err := os.OpenFile(filepath.Join(f.dir, name), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	fmt.Fprintln(fl, line)
	fl.Close()
}

// marker reports whether the named marker existed, creating it.
func (f *fake) marker(name string) bool {
	p := filepath.Join(f.dir, name)
	if _, err := os.Stat(p); err == nil {
		return true
	}
	os.WriteFile(p, nil, 0o644)
	return false
}

func (f *fake) read() ([]byte, error) {
	n := -1
	for {
		line, err := f.in.ReadString('\n')
		if err != nil {
			return nil, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		if v, ok := strings.CutPrefix(strings.ToLower(line), "content-length:"); ok {
			n, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	b := make([]byte, n)
	_, err := io.ReadFull(f.in, b)
	return b, err
}

func (f *fake) raw(s string) {
	f.wmu.Lock()
	io.WriteString(f.out, s)
	f.wmu.Unlock()
}

func (f *fake) send(v any) {
	b, _ := json.Marshal(v)
	f.raw(fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(b), b))
}

func (f *fake) reply(id json.RawMessage, result any) {
	f.send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func (f *fake) replyRaw(id json.RawMessage, result string) {
	f.raw(fmt.Sprintf("Content-Length: %d\r\n\r\n", len(`{"jsonrpc":"2.0","id":`)+len(id)+len(`,"result":`)+len(result)+1))
	f.raw(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + result + `}`)
}

func (f *fake) replyErr(id json.RawMessage, code int, msg string) {
	f.send(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
}

// ask sends a request to the client; the read loop logs its answer.
func (f *fake) ask(method string, params any) {
	f.mu.Lock()
	f.nextID++
	id := fmt.Sprintf(`"s%d"`, f.nextID)
	f.asked[id] = method
	f.mu.Unlock()
	f.send(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": method, "params": params})
}

func (f *fake) progress(kind string) {
	f.send(map[string]any{"jsonrpc": "2.0", "method": "$/progress", "params": map[string]any{"token": "idx", "value": map[string]any{"kind": kind, "title": "indexing"}}})
}

// handle answers one message; it returns an exit status to end with, or -1.
func (f *fake) handle(m message) int {
	var tdp struct {
		TextDocument struct{ URI string } `json:"textDocument"`
		Position     position             `json:"position"`
	}
	json.Unmarshal(m.Params, &tdp)
	switch m.Method {
	case "initialize":
		caps := map[string]any{
			"textDocumentSync":   1,
			"definitionProvider": true, "referencesProvider": true, "hoverProvider": true,
			"implementationProvider": map[string]any{},
		}
		if f.modes["no-impl"] {
			delete(caps, "implementationProvider")
		}
		if f.modes["utf8"] {
			caps["positionEncoding"] = "utf-8"
		}
		if f.modes["exit-in-init"] {
			fmt.Fprintln(os.Stderr, "fake: panic: initialize went wrong")
			return 2
		}
		f.reply(m.ID, map[string]any{"capabilities": caps})
	case "initialized":
		if f.modes["ask-config"] {
			f.ask("workspace/configuration", map[string]any{"items": []any{map[string]any{"section": "fake.sub"}, map[string]any{"section": "missing"}}})
			f.ask("client/registerCapability", map[string]any{"registrations": []any{}})
			f.ask("window/workDoneProgress/create", map[string]any{"token": "t"})
			f.ask("workspace/applyEdit", map[string]any{"edit": map[string]any{}})
		}
	case "textDocument/didOpen":
		switch {
		case f.modes["log-ready"]:
			go func() {
				time.Sleep(100 * time.Millisecond)
				f.send(map[string]any{"jsonrpc": "2.0", "method": "window/logMessage", "params": map[string]any{"type": 3, "message": "Found 12 source files"}})
			}()
		case f.modes["quiescent"]:
			go func() {
				time.Sleep(100 * time.Millisecond)
				f.send(map[string]any{"jsonrpc": "2.0", "method": "experimental/serverStatus", "params": map[string]any{"health": "ok", "quiescent": true}})
			}()
		case f.modes["progress-forever"]:
			f.progress("begin")
		case f.modes["progress-late"]:
			go func() {
				time.Sleep(800 * time.Millisecond)
				f.progress("begin")
				time.Sleep(200 * time.Millisecond)
				f.mu.Lock()
				f.loaded = true
				f.mu.Unlock()
				f.progress("end")
			}()
		case f.modes["progress-ends"]:
			f.progress("begin")
			go func() { time.Sleep(150 * time.Millisecond); f.progress("end") }()
		}
	case "textDocument/definition", "textDocument/implementation", "textDocument/references":
		f.defs++
		f.mu.Lock()
		early := f.modes["progress-late"] && !f.loaded
		f.mu.Unlock()
		switch {
		case early:
			f.reply(m.ID, nil) // a server answering before it has loaded
			return -1
		case f.modes["crash-once"] && !f.marker("crashed"):
			fmt.Fprintln(os.Stderr, "fake: crashing once")
			return 1
		case f.modes["crash-always"]:
			fmt.Fprintln(os.Stderr, "fake: crashing on every query")
			return 1
		case f.modes["server-error"]:
			f.replyErr(m.ID, -32603, "internal boom")
			return -1
		case f.modes["content-modified-once"] && f.defs == 1:
			f.replyErr(m.ID, codeContentModified, "content modified")
			return -1
		case f.modes["content-modified-always"]:
			f.replyErr(m.ID, codeContentModified, "content modified")
			return -1
		case f.modes["hang"], f.modes["hang-ignore-cancel"]:
			f.mu.Lock()
			f.hanging[string(m.ID)] = true
			f.mu.Unlock()
			return -1
		case f.modes["huge-header"]:
			f.raw("X-Pad: " + strings.Repeat("a", 70<<10) + "\r\nContent-Length: 2\r\n\r\n{}")
			return -1
		case f.modes["huge-body"]:
			f.replyRaw(m.ID, `"`+strings.Repeat("b", 5000)+`"`)
			return -1
		case f.modes["bad-json"]:
			f.raw("Content-Length: 5\r\n\r\n{nope")
			return -1
		case os.Getenv("FAKE_LSP_RESULT") != "":
			r := strings.NewReplacer("$URI", tdp.TextDocument.URI,
				"$LINE", strconv.Itoa(tdp.Position.Line), "$CHAR", strconv.Itoa(tdp.Position.Character),
				"$END", strconv.Itoa(tdp.Position.Character+2)).Replace(os.Getenv("FAKE_LSP_RESULT"))
			f.replyRaw(m.ID, r)
			return -1
		}
		// Echo: the position asked, as a two-unit range.
		f.reply(m.ID, map[string]any{"uri": tdp.TextDocument.URI, "range": map[string]any{
			"start": tdp.Position, "end": position{Line: tdp.Position.Line, Character: tdp.Position.Character + 2}}})
	case "textDocument/hover":
		if h := os.Getenv("FAKE_LSP_HOVER"); h != "" {
			f.replyRaw(m.ID, h)
		} else {
			f.reply(m.ID, map[string]any{"contents": map[string]any{"kind": "markdown", "value": "func F()"}})
		}
	case "$/cancelRequest":
		var p struct {
			ID json.RawMessage `json:"id"`
		}
		json.Unmarshal(m.Params, &p)
		f.mu.Lock()
		h := f.hanging[string(p.ID)]
		f.mu.Unlock()
		if h && !f.modes["hang-ignore-cancel"] {
			f.replyErr(p.ID, codeRequestCancelled, "cancelled")
		}
	case "shutdown":
		if f.modes["no-shutdown"] {
			return -1
		}
		f.reply(m.ID, nil)
	case "exit":
		return 0
	default:
		if len(m.ID) > 0 {
			f.replyErr(m.ID, codeMethodNotFound, "no "+m.Method)
		}
	}
	return -1
}
