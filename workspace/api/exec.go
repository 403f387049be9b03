package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/workspace"
)

// Bounds of an exec's inputs.
const (
	maxArgs   = 4096
	maxEnv    = 1024
	tailBytes = 4096 // what the Result keeps; the stream has it all
)

func (a *API) checkExec(req *workspace.ExecRequest) *apiError {
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		return errorf(http.StatusBadRequest, codeInvalid, "argv is required: the program and its arguments, such as [\"sh\",\"-c\",\"echo hi\"]")
	}
	if len(req.Argv) > maxArgs {
		return errorf(http.StatusBadRequest, codeInvalid, "argv has %d entries, over %d; pass long input on stdin", len(req.Argv), maxArgs)
	}
	for i, s := range req.Argv {
		if strings.IndexByte(s, 0) >= 0 {
			return errorf(http.StatusBadRequest, codeInvalid, "argv[%d] holds a NUL byte, which no argument can carry", i)
		}
	}
	if len(req.Env) > maxEnv {
		return errorf(http.StatusBadRequest, codeInvalid, "env has %d entries, over %d", len(req.Env), maxEnv)
	}
	for i, kv := range req.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.IndexByte(kv, 0) >= 0 {
			return errorf(http.StatusBadRequest, codeInvalid, "env[%d] %q: give KEY=VALUE", i, trunc(kv))
		}
	}
	if req.Dir != "" {
		if e := checkPath("dir", req.Dir); e != nil {
			return e
		}
	}
	if d := time.Duration(req.Timeout); d > a.opts.MaxExecTimeout {
		return durationError("timeout", d, a.opts.MaxExecTimeout)
	}
	return nil
}

// exec runs a command and streams its output as NDJSON, one event per
// chunk as it arrives, flushed, and the exit last. A client that goes
// away stops the command (its process group is ended).
func (a *API) exec(w http.ResponseWriter, r *http.Request) {
	var req workspace.ExecRequest
	if e := a.decode(w, r, &req, false); e != nil {
		writeError(w, e)
		return
	}
	if e := a.checkExec(&req); e != nil {
		writeError(w, e)
		return
	}
	world, release, ok := a.borrow(w, r)
	if !ok {
		return
	}
	defer release()
	timeout := time.Duration(req.Timeout)
	if timeout == 0 {
		timeout = DefaultExecTimeout
	}
	s := &stream{w: w, rc: http.NewResponseController(w)}
	if f, ok := w.(http.Flusher); ok {
		s.flush = f.Flush
	}
	cmd := &execworld.Cmd{
		Argv:           req.Argv,
		Env:            req.Env,
		Dir:            req.Dir,
		Stdout:         streamWriter{s, false},
		Stderr:         streamWriter{s, true},
		Timeout:        timeout,
		MaxOutputBytes: tailBytes,
	}
	if len(req.Stdin) > 0 {
		cmd.Stdin = bytes.NewReader(req.Stdin)
	}
	run, err := world.Exec.Start(r.Context(), cmd)
	if err != nil {
		// Nothing ran, so nothing was streamed: the error is the answer.
		a.fail(w, r, err)
		return
	}
	// The answer starts now, not with the first output: a client sees
	// that the command runs even while it prints nothing.
	s.running(run.Stop)
	s.begin()
	stop := context.AfterFunc(r.Context(), run.Stop)
	res, err := run.Wait()
	stop()
	if err != nil && res == nil {
		s.event(&workspace.ExecEvent{Error: &workspace.ErrorBody{Code: codeInternal, Message: "the command's end was not seen: " + err.Error()}})
		return
	}
	exit := &workspace.ExecExit{Code: res.ExitCode(), DurationMS: res.Duration.Milliseconds()}
	if sig := res.Status.Signal; sig != 0 {
		exit.Signal = unix.SignalName(sig)
	}
	s.event(&workspace.ExecEvent{Exit: exit})
}

var errGone = errors.New("the client went away")

// stream writes the events of one exec, one JSON line each, flushed.
type stream struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	rc      *http.ResponseController
	flush   func()
	stop    func() // stops the command once it runs; nil before
	started bool
	failed  bool
}

// writeStall bounds one write of an exec's answer: a client that keeps
// the connection but stops reading would otherwise hold the command, and
// the workspace's world with it, until the command's timeout.
var writeStall = 30 * time.Second

// running tells the stream how to stop the command when the client is
// gone or stalls.
func (s *stream) running(stop func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stop = stop
	if s.failed {
		go stop()
	}
}

// begin sends the answer's header, flushed, unless output did first.
func (s *stream) begin() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		s.writeHeader()
		if s.flush != nil {
			s.flush()
		}
	}
}

func (s *stream) writeHeader() {
	s.started = true
	h := s.w.Header()
	h.Set("Content-Type", "application/x-ndjson")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	s.w.WriteHeader(http.StatusOK)
}

func (s *stream) event(ev *workspace.ExecEvent) error {
	line, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed {
		return errGone
	}
	if !s.started {
		s.writeHeader()
	}
	_ = s.rc.SetWriteDeadline(time.Now().Add(writeStall)) // unsupported by some writers: then unbounded
	if _, err := s.w.Write(line); err != nil {
		s.failed = true
		if s.stop != nil {
			go s.stop()
		}
		return err
	}
	if s.flush != nil {
		s.flush()
	}
	return nil
}

// streamWriter is the stdout or stderr of a command, as events.
type streamWriter struct {
	s      *stream
	stderr bool
}

func (sw streamWriter) Write(p []byte) (int, error) {
	ev := &workspace.ExecEvent{Stdout: p}
	if sw.stderr {
		ev = &workspace.ExecEvent{Stderr: p}
	}
	// Marshal copies p (base64) before Write returns.
	if err := sw.s.event(ev); err != nil {
		return 0, err
	}
	return len(p), nil
}
