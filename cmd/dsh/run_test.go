package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		{[]string{"--unconfined", "--env", "NOEQUALS", "--", "true"}, 125, "--env"},
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

	// dsh's own failure is one JSON object too.
	code, stdout, _ = dshRun(t, "--unconfined", "--json", "--", "dsh-no-such-program")
	var fail struct {
		ExitCode int    `json:"exit_code"`
		Error    string `json:"error"`
	}
	if err := json.Unmarshal([]byte(stdout), &fail); err != nil || code != 127 || fail.ExitCode != 127 || !strings.Contains(fail.Error, "not found") {
		t.Fatalf("--json start failure: exit %d, %q (%v)", code, stdout, err)
	}
}
