package gateway

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-dev/dsh/execworld"
)

// ExecInput is the exec tool's input.
type ExecInput struct {
	Command string   `json:"command,omitempty" jsonschema:"a shell command line, run with bash (sh where bash is absent); give this or argv, not both"`
	Argv    []string `json:"argv,omitempty" jsonschema:"the program and its arguments, run without a shell; give this or command, not both"`
	Cwd     string   `json:"cwd,omitempty" jsonschema:"working directory, relative to the workspace (default: the workspace root)"`
	Timeout float64  `json:"timeout,omitempty" jsonschema:"seconds before the command is ended (default 120, at most 600)"`
	Stdin   string   `json:"stdin,omitempty" jsonschema:"text written to the command's standard input, which is then closed"`
}

// ExecOutput is the exec tool's result.
type ExecOutput struct {
	ExitCode int    `json:"exit_code" jsonschema:"the status a shell reports: the exit code, 128+N after signal N, 124 after the timeout"`
	Signal   string `json:"signal,omitempty" jsonschema:"the signal that killed the command, if one did"`
	TimedOut bool   `json:"timed_out" jsonschema:"the timeout ended the command"`
	Stdout   Stream `json:"stdout"`
	Stderr   Stream `json:"stderr"`
	// DurationMs is the time from start to exit.
	DurationMs float64 `json:"duration_ms"`
	World      string  `json:"world" jsonschema:"the ID of the world the command ran in"`
}

// Stream is what exec kept of one output stream.
type Stream struct {
	Text      string `json:"text" jsonschema:"the exact tail of the stream (base64 when encoding says so)"`
	Encoding  string `json:"encoding,omitempty" jsonschema:"base64 when the tail is not UTF-8 text"`
	Bytes     int64  `json:"bytes" jsonschema:"bytes the stream carried in all"`
	Truncated bool   `json:"truncated" jsonschema:"earlier bytes were cut from text"`
	Spill     string `json:"spill,omitempty" jsonschema:"when truncated: a path read_file reads, holding the whole stream (up to the spill cap)"`
	SpillCut  bool   `json:"spill_truncated,omitempty" jsonschema:"the stream was longer than the spill cap too"`
}

// Limits of exec.
const (
	DefaultExecTimeout = execworld.DefaultTimeout
	MaxExecTimeout     = execworld.MaxTimeout
	ExecTailBytes      = execworld.DefaultMaxOutputBytes
	// progressEvery throttles progress notifications.
	progressEvery = 250 * time.Millisecond
	// maxProgressMessage caps the output carried by one notification.
	maxProgressMessage = 4096
)

func (g *Gateway) addExec() {
	addTool(g, &mcp.Tool{
		Name:  "exec",
		Title: "Run a command in the confined world",
		Description: "Run a command inside this session's confined world (no host network, limits, private /tmp). " +
			"Give command (a shell line) or argv (no shell). Returns the exit code and the last 64,000 bytes of stdout and stderr; " +
			"when output was cut, spill names a file with all of it for read_file. Progress notifications stream output when a progress token is sent; cancelling kills the whole process tree.",
		Annotations: &mcp.ToolAnnotations{Title: "exec", DestructiveHint: ptr(true), OpenWorldHint: ptr(false)},
	}, g.exec)
}

func (g *Gateway) exec(ctx context.Context, c *call, in ExecInput) (string, ExecOutput, error) {
	var out ExecOutput
	if (in.Command == "") == (len(in.Argv) == 0) {
		return "", out, badArg("command", "give exactly one of command (a shell line) or argv (a program and its arguments)")
	}
	if len(in.Argv) > 0 && in.Argv[0] == "" {
		return "", out, badArg("argv", "argv[0], the program, is empty; give the program first")
	}
	timeout := DefaultExecTimeout
	if in.Timeout < 0 || in.Timeout > MaxExecTimeout.Seconds() {
		return "", out, badArg("timeout", "%v seconds is outside 0 to %v; give at most %v (0 means the default %v)", in.Timeout, MaxExecTimeout.Seconds(), MaxExecTimeout.Seconds(), DefaultExecTimeout.Seconds())
	}
	if in.Timeout > 0 {
		timeout = time.Duration(in.Timeout * float64(time.Second))
	}
	w, err := c.world(ctx)
	if err != nil {
		return "", out, err
	}
	argv := in.Argv
	shell := ""
	if in.Command != "" {
		shell = c.s.shellName()
		argv = []string{shell, "-c", in.Command}
	}
	spill, err := newSpills(c.s.spillDir(w), c.id, c.g.opts.MaxSpillBytes)
	if err != nil {
		return "", out, err
	}
	defer spill.close()
	prog := newProgress(ctx, c.req)
	cmd := &execworld.Cmd{
		Argv:    argv,
		Dir:     in.Cwd,
		Timeout: timeout,
		Stdout:  multi(spill.out, prog.writer()),
		Stderr:  multi(spill.err, prog.writer()),
	}
	if in.Stdin != "" {
		cmd.Stdin = strings.NewReader(in.Stdin)
	}
	res, err := w.Exec.Run(ctx, cmd)
	var se *execworld.StartError
	if err != nil && shell == "bash" && errors.As(err, &se) && se.Code == 127 {
		// No bash in this world: the line runs with sh, now and later.
		c.s.setShell("sh")
		cmd.Argv = []string{"sh", "-c", in.Command}
		if in.Stdin != "" {
			cmd.Stdin = strings.NewReader(in.Stdin)
		}
		res, err = w.Exec.Run(ctx, cmd)
	}
	prog.stop()
	if err != nil && res == nil {
		// Nothing ran: the command was refused before it started.
		switch {
		case errors.Is(err, execworld.ErrInvalidCmd) && in.Cwd != "" && strings.Contains(err.Error(), "working directory"):
			return "", out, badArg("cwd", "%v", err)
		case errors.Is(err, execworld.ErrInvalidCmd), errors.As(err, &se):
			arg := "argv"
			if in.Command != "" {
				arg = "command"
			}
			return "", out, badArg(arg, "%v", err)
		}
		return "", out, err
	}
	if err != nil {
		// Cancelled: the process tree was ended; say so as a tool error.
		return "", out, fmt.Errorf("the command was ended (its whole process tree killed) because the call was cancelled: %w", err)
	}
	code := res.ExitCode()
	c.exit = &code
	out = ExecOutput{
		ExitCode:   code,
		TimedOut:   res.TimedOut,
		DurationMs: float64(res.Duration.Microseconds()) / 1000,
		World:      w.ID,
		Stdout:     stream(res.Stdout, spill.keep(spill.out, res.Stdout.Truncated)),
		Stderr:     stream(res.Stderr, spill.keep(spill.err, res.Stderr.Truncated)),
	}
	if res.Status.Signal != 0 {
		out.Signal = res.Status.Signal.String()
	}
	out.Stdout.SpillCut = out.Stdout.Spill != "" && spill.out.cut
	out.Stderr.SpillCut = out.Stderr.Spill != "" && spill.err.cut
	return execText(&out), out, nil
}

func (s *session) shellName() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shell == "" {
		return "bash"
	}
	return s.shell
}

func (s *session) setShell(sh string) {
	s.mu.Lock()
	s.shell = sh
	s.mu.Unlock()
}

func stream(o execworld.Output, spill string) Stream {
	st := Stream{Bytes: o.Total, Truncated: o.Truncated, Spill: spill}
	if utf8.Valid(o.Data) {
		st.Text = string(o.Data)
	} else {
		st.Text, st.Encoding = base64.StdEncoding.EncodeToString(o.Data), "base64"
	}
	return st
}

// execText is the concise rendering of an exec result.
func execText(o *ExecOutput) string {
	var b strings.Builder
	status := fmt.Sprintf("exit %d", o.ExitCode)
	if o.Signal != "" {
		status += " (" + o.Signal + ")"
	}
	if o.TimedOut {
		status += " (timed out)"
	}
	b.WriteString(status)
	b.WriteString("\n")
	for _, s := range []struct {
		name string
		st   Stream
	}{{"stdout", o.Stdout}, {"stderr", o.Stderr}} {
		if s.st.Bytes == 0 {
			continue
		}
		fmt.Fprintf(&b, "--- %s", s.name)
		if s.st.Truncated {
			fmt.Fprintf(&b, " (last %d of %d bytes; all of it: read_file %s)", len(s.st.Text), s.st.Bytes, s.st.Spill)
		}
		if s.st.Encoding != "" {
			fmt.Fprintf(&b, " (%s)", s.st.Encoding)
		}
		b.WriteString("\n")
		b.WriteString(s.st.Text)
		if !strings.HasSuffix(s.st.Text, "\n") {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// spills are the two spill files of one exec call, in the world's
// private spill directory: written as the output arrives, kept only for
// a stream that was cut, removed with the world.
type spills struct {
	out, err *spillFile
}

func newSpills(dir, id string, max int64) (*spills, error) {
	if dir == "" {
		return nil, errClosed
	}
	o, err := newSpillFile(dir, id+".stdout", max)
	if err != nil {
		return nil, err
	}
	e, err := newSpillFile(dir, id+".stderr", max)
	if err != nil {
		o.discard()
		return nil, err
	}
	return &spills{out: o, err: e}, nil
}

// keep keeps f if the stream was truncated and returns its read_file
// path, else removes it and returns "".
func (s *spills) keep(f *spillFile, truncated bool) string {
	if !truncated {
		f.discard()
		return ""
	}
	f.kept = true
	return spillPath(filepath.Base(f.f.Name()))
}

func (s *spills) close() {
	for _, f := range []*spillFile{s.out, s.err} {
		f.f.Close()
		if !f.kept {
			os.Remove(f.f.Name())
		}
	}
}

type spillFile struct {
	mu      sync.Mutex
	f       *os.File
	n, max  int64
	cut     bool
	kept    bool
	removed bool
}

func newSpillFile(dir, name string, max int64) (*spillFile, error) {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("making a spill file: %w", err)
	}
	return &spillFile{f: f, max: max}, nil
}

// Write keeps the first max bytes; it never fails, so the command is
// never stalled by its spill file.
func (s *spillFile) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(p)
	if s.removed {
		return n, nil
	}
	if room := s.max - s.n; int64(len(p)) > room {
		p = p[:max(room, 0)]
		s.cut = true
	}
	if len(p) > 0 {
		if k, err := s.f.Write(p); err == nil {
			s.n += int64(k)
		}
	}
	return n, nil
}

func (s *spillFile) discard() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.removed {
		s.removed = true
		s.f.Close()
		os.Remove(s.f.Name())
	}
}

func multi(ws ...interface{ Write([]byte) (int, error) }) *fanout {
	return &fanout{ws: ws}
}

type fanout struct {
	ws []interface{ Write([]byte) (int, error) }
}

func (f *fanout) Write(p []byte) (int, error) {
	for _, w := range f.ws {
		if w != nil {
			w.Write(p)
		}
	}
	return len(p), nil
}

// progress streams output as progress notifications when the client
// asked for them (a progress token), throttled.
type progress struct {
	ctx   context.Context
	req   *mcp.CallToolRequest
	token any

	mu      sync.Mutex
	pending []byte
	total   int64
	timer   *time.Timer
	stopped bool
}

func newProgress(ctx context.Context, req *mcp.CallToolRequest) *progress {
	p := &progress{ctx: ctx, req: req}
	if req != nil && req.Params != nil && req.Session != nil {
		p.token = req.Params.GetProgressToken()
	}
	return p
}

// writer is the progress writer, or nil without a token.
func (p *progress) writer() interface{ Write([]byte) (int, error) } {
	if p.token == nil {
		return nil
	}
	return p
}

func (p *progress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return len(b), nil
	}
	p.total += int64(len(b))
	p.pending = append(p.pending, b...)
	if len(p.pending) > maxProgressMessage {
		p.pending = p.pending[len(p.pending)-maxProgressMessage:]
	}
	if p.timer == nil {
		p.timer = time.AfterFunc(progressEvery, p.flush)
	}
	return len(b), nil
}

func (p *progress) flush() {
	p.mu.Lock()
	msg, total := string(p.pending), p.total
	p.pending, p.timer = nil, nil
	p.mu.Unlock()
	if msg == "" {
		return
	}
	p.req.Session.NotifyProgress(p.ctx, &mcp.ProgressNotificationParams{
		ProgressToken: p.token, Progress: float64(total), Message: strings.ToValidUTF8(msg, "\uFFFD"),
	})
}

// stop sends what is pending and ends the notifications.
func (p *progress) stop() {
	if p.token == nil {
		return
	}
	p.mu.Lock()
	if p.timer != nil {
		p.timer.Stop()
	}
	p.mu.Unlock()
	p.flush()
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
}
