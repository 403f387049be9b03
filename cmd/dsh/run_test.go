package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/execworld/execworldtest"
)

// dshRun runs "dsh run ARGS" in-process and returns its exit status and
// output.
func dshRun(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	t.Chdir(t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // no user config file
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetIn(strings.NewReader(""))
	root.SetArgs(append([]string{"run"}, args...))
	err := root.Execute()
	var ee *exitError
	switch {
	case err == nil:
		code = 0
	case errors.As(err, &ee):
		code = ee.code
		errOut.WriteString(ee.msg)
	default:
		t.Fatalf("dsh run %q: %v", args, err)
	}
	return code, out.String(), errOut.String()
}

func TestRunStatuses(t *testing.T) {
	for _, c := range []struct {
		args     []string
		code     int
		inStderr string
	}{
		{[]string{"--unconfined", "--", "sh", "-c", "exit 3"}, 3, "NO confinement"},
		{[]string{"--unconfined", "--", "sh", "-c", "kill -KILL $$"}, 137, ""},
		{[]string{"--unconfined", "--timeout", "200ms", "--", "sleep", "30"}, 124, "timed out"},
		{[]string{"--unconfined", "--", "dsh-no-such-program"}, 127, "not found"},
		{[]string{"--unconfined", "--", "/etc/hostname"}, 126, "not executable"},
		{[]string{"--driver", "host", "--", "true"}, 125, "--unconfined"},
		{[]string{"--unconfined", "--driver", "docker", "--", "true"}, 125, "drop one"},
		{[]string{"--driver", "nonesuch", "--", "true"}, 125, "sandbox.driver"},
		{[]string{"--unconfined", "--workspace", "/nonexistent/dsh", "--", "true"}, 125, "workspace"},
		{[]string{"--unconfined", "--memory", "lots", "--", "true"}, 125, "memory"},
		{[]string{"--unconfined", "--allow", "not a host!", "--", "true"}, 125, "egress policy"},
		{[]string{"--unconfined", "--env", "=NONAME", "--", "true"}, 125, "--env"}, // a bare NAME copies the host value
		{[]string{"--unconfined", "--no-limits", "--memory", "1G", "--", "true"}, 125, "limits are off"},
	} {
		code, _, stderr := dshRun(t, c.args...)
		if code != c.code || !strings.Contains(stderr, c.inStderr) {
			t.Errorf("dsh run %q = %d, stderr %q; want %d and %q in stderr", c.args, code, stderr, c.code, c.inStderr)
		}
	}
}

func TestRunStreamsAndJSON(t *testing.T) {
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "in.txt"), []byte("from the workspace\n"), 0o644)
	code, stdout, _ := dshRun(t, "--unconfined", "--workspace", ws, "--env", "GREETING=hi", "--", "sh", "-c", `cat in.txt; echo "$GREETING"; pwd`)
	realWS, _ := filepath.EvalSymlinks(ws)
	if want := "from the workspace\nhi\n" + realWS + "\n"; code != 0 || stdout != want {
		t.Fatalf("dsh run = %d, %q; want 0, %q", code, stdout, want)
	}

	t.Setenv("DSH_TEST_HOST_SECRET", "leaked")
	code, stdout, _ = dshRun(t, "--unconfined", "--json", "--", "sh", "-c", `env; echo oops >&2; exit 4`)
	var res runResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("--json output %q: %v", stdout, err)
	}
	if code != 4 || res.ExitCode != 4 || res.Confined || res.Driver != "host" || res.Stderr != "oops\n" {
		t.Fatalf("--json result = %+v (exit %d)", res, code)
	}
	if strings.Contains(res.Stdout, "DSH_TEST_HOST_SECRET") {
		t.Fatalf("the host environment entered the command: %q", res.Stdout)
	}

	// dsh's own failure is the error envelope, with the status.
	code, stdout, _ = dshRun(t, "--unconfined", "--json", "--", "dsh-no-such-program")
	var fail struct {
		ExitCode int `json:"exit_code"`
		Error    struct{ Code, Message string }
	}
	if err := json.Unmarshal([]byte(stdout), &fail); err != nil || code != 127 || fail.ExitCode != 127 ||
		fail.Error.Code != "NOT_FOUND" || !strings.Contains(fail.Error.Message, "not found") {
		t.Fatalf("--json start failure: exit %d, %q (%v)", code, stdout, err)
	}
}

// notifyWriter closes ready when it first sees want.
type notifyWriter struct {
	mu    sync.Mutex
	buf   strings.Builder
	want  string
	ready chan struct{}
	once  sync.Once
}

func (n *notifyWriter) Write(p []byte) (int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.buf.Write(p)
	if strings.Contains(n.buf.String(), n.want) {
		n.once.Do(func() { close(n.ready) })
	}
	return len(p), nil
}

// Ctrl-C reaches the command as SIGINT, as a shell passes it to its
// foreground job, and the command decides its own status.
func TestRunForwardsSignals(t *testing.T) {
	w, _ := execworldtest.NewWorld(t, nil)
	out := &notifyWriter{want: "ready", ready: make(chan struct{})}
	done := make(chan struct{})
	var res *execworld.Result
	var err error
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt)
	defer signal.Stop(sigs)
	go func() {
		defer close(done)
		res, err = runInWorld(context.Background(), w, &execworld.Cmd{
			Argv:   []string{"/bin/sh", "-c", `trap "exit 7" INT; echo ready; while :; do sleep 0.05; done`},
			Stdout: out,
		}, sigs, nil)
	}()
	select {
	case <-out.ready:
	case <-done:
		t.Fatalf("command ended early: %+v, %v", res, err)
	}
	// The handler is installed, so this SIGINT goes to the channel, not
	// to the test binary's default action.
	syscall.Kill(os.Getpid(), syscall.SIGINT)
	<-done
	if err != nil || res.ExitCode() != 7 {
		t.Fatalf("after SIGINT: %+v, %v; want the trap's exit 7", res, err)
	}
}
