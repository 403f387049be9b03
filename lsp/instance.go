package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/dsh-dev/dsh/execworld"
)

// stderrTailChars is how much of a server's stderr an error quotes.
const stderrTailChars = 2000

// instance is one running language server for one workspace.
type instance struct {
	cfg    *ServerConfig
	run    *execworld.Running
	conn   *conn
	caps   initializeResult
	folder string // the workspace's world path
	logRE  *regexp.Regexp

	mu       sync.Mutex // guards the fields below
	active   map[string]bool
	sawBegin bool
	// noProgress: a progress-gated server began no work within a
	// readiness cap; it is taken to report none (settleLocked).
	noProgress bool
	lastEnd    time.Time // when the last open work ended
	logged     bool      // a log line matched logRE
	quiet      bool      // rust-analyzer says quiescent
	changed    chan struct{}
}

// startInstance starts cfg's server in the world for the workspace at
// world path folder (host path dir) and initializes it.
func startInstance(ctx context.Context, w *execworld.World, cfg *ServerConfig, dir, folder string) (*instance, error) {
	in := &instance{cfg: cfg, folder: folder, active: map[string]bool{}, changed: make(chan struct{})}
	if cfg.Readiness.Kind == ReadyLog {
		in.logRE = regexp.MustCompile(cfg.Readiness.Pattern) // validated
	}
	if len(cfg.prepare) > 0 {
		res, err := w.Exec.Run(ctx, &execworld.Cmd{Argv: cfg.prepare, Dir: dir, Env: cfg.Env})
		if err == nil && res.ExitCode() != 0 {
			err = fmt.Errorf("exit %d: %s", res.ExitCode(), res.Stderr.Data)
		}
		if err != nil {
			return nil, errorf(CodeUnavailable, err, "preparing language server %s: %v", cfg.ID, err)
		}
	}
	run, err := w.Exec.Start(ctx, &execworld.Cmd{
		Argv:           append([]string{cfg.Command}, cfg.Args...),
		Dir:            dir,
		Env:            cfg.Env,
		StdinPipe:      true,
		StdoutPipe:     true,
		MaxOutputBytes: cfg.MaxStderrBytes,
		Grace:          cfg.KillGrace,
	})
	if err != nil {
		var se *execworld.StartError
		if errors.As(err, &se) && (se.Code == 127 || se.Code == 126) {
			what := "is not found in the world"
			if se.Code == 126 {
				what = "cannot be executed in the world"
			}
			hint := ""
			if cfg.Image != "" {
				hint = " (the image " + cfg.Image + " has it: --driver docker --image " + cfg.Image + ")"
			}
			return nil, errorf(CodeUnavailable, err, "language server %s: %s %s; install it where the world sees it%s, or set lsp.servers[].command", cfg.ID, cfg.Command, what, hint)
		}
		return nil, errorf(CodeUnavailable, err, "starting language server %s (%s): %v", cfg.ID, cfg.Command, err)
	}
	in.run = run
	in.conn = newConn(run.Conn(), cfg.MaxMessageBytes, in, cfg.KillGrace)
	if err := in.initialize(ctx); err != nil {
		in.kill()
		return nil, err
	}
	return in, nil
}

func (in *instance) initialize(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, in.cfg.StartupTimeout)
	defer cancel()
	root := fileURI(in.folder)
	params := map[string]any{
		// null, never a host PID: servers built on vscode-languageserver
		// exit when the PID is not visible in their PID namespace.
		"processId":        nil,
		"clientInfo":       map[string]string{"name": "dsh"},
		"rootUri":          root,
		"rootPath":         in.folder,
		"workspaceFolders": []map[string]string{{"uri": root, "name": "workspace"}},
		"capabilities": map[string]any{
			"general":   map[string]any{"positionEncodings": []string{"utf-16"}},
			"workspace": map[string]any{"workspaceFolders": true, "configuration": true},
			"window":    map[string]any{"workDoneProgress": true},
			"textDocument": map[string]any{
				"synchronization": map[string]any{"dynamicRegistration": false},
				"hover":           map[string]any{"contentFormat": []string{"markdown", "plaintext"}},
				"definition":      map[string]any{"linkSupport": true},
				"implementation":  map[string]any{"linkSupport": true},
				"references":      map[string]any{},
			},
			"experimental": map[string]any{"serverStatusNotification": true},
		},
	}
	if len(in.cfg.InitializationOptions) > 0 {
		params["initializationOptions"] = in.cfg.InitializationOptions
	}
	var raw json.RawMessage
	if err := in.conn.call(ctx, "initialize", params, &raw); err != nil {
		return in.startFailure(ctx, err)
	}
	if err := json.Unmarshal(raw, &in.caps); err != nil {
		return errorf(CodeMalformedResponse, err, "language server %s answered initialize with something that is not an InitializeResult: %v", in.cfg.ID, err)
	}
	if enc := in.caps.Capabilities.PositionEncoding; enc != "" && enc != "utf-16" {
		return errorf(CodeUnavailable, nil, "language server %s chose position encoding %q although dsh offered only utf-16; configure the server for utf-16", in.cfg.ID, enc)
	}
	if !syncOpenClose(in.caps.Capabilities.TextDocumentSync) {
		return errorf(CodeUnavailable, nil, "language server %s does not take didOpen/didClose (textDocumentSync %s); dsh queries only open documents", in.cfg.ID, string(in.caps.Capabilities.TextDocumentSync))
	}
	if err := in.conn.notify("initialized", map[string]any{}); err != nil {
		return in.startFailure(ctx, err)
	}
	return nil
}

// startFailure describes why start failed, with the stderr tail when the
// server exited.
func (in *instance) startFailure(ctx context.Context, err error) error {
	if ctx.Err() != nil && !isTransport(err) {
		if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
			return errorf(CodeServerFailed, err, "language server %s did not answer initialize within %v%s", in.cfg.ID, in.cfg.StartupTimeout, in.stderrNote())
		}
		return errorf(CodeAborted, err, "starting language server %s was cancelled", in.cfg.ID)
	}
	if isTransport(err) {
		return &Error{Code: CodeServerFailed, Msg: fmt.Sprintf("language server %s failed during start: %s%s", in.cfg.ID, in.exitNote(err), in.stderrNote()), Err: err}
	}
	return errorf(CodeServerFailed, err, "language server %s refused initialize: %v%s", in.cfg.ID, err, in.stderrNote())
}

// exitNote says how the process ended, waiting a moment for it to be
// reaped: its output closing usually comes just before its exit.
func (in *instance) exitNote(err error) string {
	select {
	case <-in.run.Done():
		res, _ := in.run.Wait()
		return fmt.Sprintf("it exited (%s)", res.Status)
	case <-time.After(in.cfg.KillGrace):
		return err.Error()
	}
}

func (in *instance) stderrNote() string {
	_, stderr := in.run.Tail()
	s := strings.TrimSpace(stderr.String())
	if s == "" {
		return "; it wrote nothing to stderr"
	}
	if r := []rune(s); len(r) > stderrTailChars {
		s = "…" + string(r[len(r)-stderrTailChars:])
	}
	return "; its stderr ends:\n" + s
}

// failed reports whether the connection is gone.
func (in *instance) failed() bool { return in.conn.Err() != nil }

// request implements handler: static answers to the server's requests.
func (in *instance) request(method string, params json.RawMessage) (any, *ResponseError) {
	switch method {
	case "workspace/configuration":
		var p struct {
			Items []struct {
				Section string `json:"section"`
			} `json:"items"`
		}
		json.Unmarshal(params, &p)
		out := make([]any, len(p.Items))
		for i, it := range p.Items {
			out[i] = section(in.cfg.Settings, it.Section)
		}
		return out, nil
	case "workspace/workspaceFolders":
		root := fileURI(in.folder)
		return []map[string]string{{"uri": root, "name": "workspace"}}, nil
	case "window/workDoneProgress/create", "client/registerCapability", "client/unregisterCapability",
		"window/showMessageRequest", "workspace/semanticTokens/refresh", "workspace/inlayHint/refresh",
		"workspace/codeLens/refresh", "workspace/diagnostic/refresh":
		return nil, nil
	}
	return nil, &ResponseError{Code: codeMethodNotFound, Message: "dsh does not offer " + method}
}

// notify implements handler: progress and readiness signals are kept,
// every other notification dropped.
func (in *instance) notify(method string, params json.RawMessage) {
	switch method {
	case "$/progress":
		var p struct {
			Token json.RawMessage `json:"token"`
			Value struct {
				Kind string `json:"kind"`
			} `json:"value"`
		}
		if json.Unmarshal(params, &p) != nil {
			return
		}
		tok := string(p.Token)
		in.update(func() {
			switch p.Value.Kind {
			case "begin":
				in.active[tok], in.sawBegin = true, true
			case "end":
				delete(in.active, tok)
				if len(in.active) == 0 {
					in.lastEnd = time.Now()
				}
			}
		})
	case "window/logMessage", "window/showMessage":
		if in.logRE == nil {
			return
		}
		var p struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(params, &p) == nil && in.logRE.MatchString(p.Message) {
			in.update(func() { in.logged = true })
		}
	case "experimental/serverStatus":
		var p struct {
			Quiescent bool `json:"quiescent"`
		}
		if json.Unmarshal(params, &p) == nil {
			in.update(func() { in.quiet = p.Quiescent })
		}
	}
}

func (in *instance) update(f func()) {
	in.mu.Lock()
	f()
	close(in.changed)
	in.changed = make(chan struct{})
	in.mu.Unlock()
}

// How long a progress-gated server may take to begin its work after a
// document opens before it counts as idle, once it has begun work once.
// Until then it is not ready at all: tsserver, starting, takes seconds
// (more on a loaded machine) to begin "Initializing JS/TS language
// features", and answers wrongly before. A server that begins no work
// within the readiness cap answers LSP_INDEXING once and counts as one
// that reports none (noProgress), ready after the settle from then on.
const progressSettle = 300 * time.Millisecond

// settleLocked is the progress gate's settle time now, or -1 while the
// server has not begun work yet. The lock must be held.
func (in *instance) settleLocked() time.Duration {
	if in.sawBegin || in.noProgress {
		return min(progressSettle, in.cfg.Readiness.Timeout/3) // well within the cap
	}
	return -1
}

// ready reports whether the readiness gate is open, and the channel that
// closes at the next signal.
func (in *instance) ready(opened time.Time) (bool, <-chan struct{}) {
	in.mu.Lock()
	defer in.mu.Unlock()
	var ok bool
	switch in.cfg.Readiness.Kind {
	case ReadyNone:
		ok = true
	case ReadyProgress:
		settle := in.settleLocked()
		ok = len(in.active) == 0 && settle >= 0 && time.Since(opened) >= settle
		if len(in.active) == 0 && in.lastEnd.After(opened) {
			ok = true
		}
	case ReadyLog:
		ok = in.logged
	case ReadyQuiescent:
		ok = in.quiet
	}
	return ok, in.changed
}

// indexing reports whether the gate is closed right now (for Status).
func (in *instance) indexing() bool {
	ok, _ := in.ready(time.Time{})
	return !ok
}

// waitReady waits for the readiness gate, up to its cap.
func (in *instance) waitReady(ctx context.Context, opened time.Time) error {
	cap := time.NewTimer(in.cfg.Readiness.Timeout)
	defer cap.Stop()
	for {
		ok, changed := in.ready(opened)
		if ok {
			return nil
		}
		var settle <-chan time.Time
		if in.cfg.Readiness.Kind == ReadyProgress {
			in.mu.Lock()
			d := in.settleLocked()
			in.mu.Unlock()
			if d >= 0 {
				t := time.NewTimer(max(0, d-time.Since(opened)) + time.Millisecond)
				defer t.Stop()
				settle = t.C
			}
		}
		select {
		case <-changed:
		case <-settle:
		case <-in.conn.Done():
			return in.conn.Err()
		case <-cap.C:
			in.update(func() {
				if !in.sawBegin {
					in.noProgress = true
				}
			})
			return errorf(CodeIndexing, nil, "language server %s is still indexing after %v (readiness: %s); try the same query again shortly", in.cfg.ID, in.cfg.Readiness.Timeout, in.cfg.Readiness.Kind)
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// supports reports whether the server advertised the operation.
func (in *instance) supports(op Operation) bool {
	c := in.caps.Capabilities
	switch op {
	case Definition:
		return provides(c.DefinitionProvider)
	case References:
		return provides(c.ReferencesProvider)
	case Implementation:
		return provides(c.ImplementationProvider)
	case Hover:
		return provides(c.HoverProvider)
	}
	return false
}

// contentModifiedRetries is how often a request the server answered
// with ContentModified is asked again.
const contentModifiedRetries = 3

// query opens the document, waits for readiness, asks, and closes it.
func (in *instance) query(ctx context.Context, op Operation, uri, lang, text string, pos position) (json.RawMessage, error) {
	if !in.supports(op) {
		return nil, errorf(CodeUnsupportedOperation, nil, "language server %s does not offer %s (not in its capabilities)", in.cfg.ID, op)
	}
	open := didOpenParams{}
	open.TextDocument.URI, open.TextDocument.LanguageID, open.TextDocument.Version, open.TextDocument.Text = uri, lang, 1, text
	if err := in.conn.notify("textDocument/didOpen", open); err != nil {
		return nil, err
	}
	opened := time.Now()
	defer in.conn.notify("textDocument/didClose", didCloseParams{TextDocument: textDocumentIdentifier{URI: uri}})
	if err := in.waitReady(ctx, opened); err != nil {
		return nil, err
	}
	tdp := textDocumentPositionParams{TextDocument: textDocumentIdentifier{URI: uri}, Position: pos}
	var params any = tdp
	if op == References {
		rp := referenceParams{textDocumentPositionParams: tdp}
		rp.Context.IncludeDeclaration = true
		params = rp
	}
	for attempt := 0; ; attempt++ {
		rctx, cancel := context.WithTimeoutCause(ctx, in.cfg.RequestTimeout, errRequestTimeout)
		var raw json.RawMessage
		err := in.conn.call(rctx, op.method(), params, &raw)
		cancel()
		var re *ResponseError
		if errors.As(err, &re) && re.Code == codeContentModified && attempt < contentModifiedRetries {
			select {
			case <-time.After(time.Duration(attempt+1) * 50 * time.Millisecond):
				continue
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		}
		return raw, err
	}
}

var errRequestTimeout = errors.New("request timeout")

// close tears the server down: shutdown and exit within the shutdown
// timeout, then the process group is ended (stdin closed, SIGTERM,
// SIGKILL) and waited for.
func (in *instance) close() {
	if !in.failed() {
		ctx, cancel := context.WithTimeout(context.Background(), in.cfg.ShutdownTimeout)
		if in.conn.call(ctx, "shutdown", nil, nil) == nil {
			in.conn.notify("exit", nil)
		}
		cancel()
	}
	in.conn.close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*in.cfg.KillGrace)
	defer cancel()
	in.run.Shutdown(ctx)
}

// kill ends the server at once.
func (in *instance) kill() {
	in.conn.close()
	ctx, cancel := context.WithTimeout(context.Background(), in.cfg.KillGrace)
	defer cancel()
	in.run.Shutdown(ctx)
	<-in.run.Done()
}
