package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/workspace"
	"github.com/dsh-dev/dsh/workspace/client/clienttest"
)

// worldCLI runs dsh with args in-process against the fake server (its
// URL in $DSH_SERVER, the server token in a --token-file unless the
// args name one) and returns stdout, stderr and the exit status.
func worldCLI(t *testing.T, f *clienttest.Fake, stdin string, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	if f != nil {
		t.Setenv(worldServerEnv, f.URL())
		t.Setenv(worldTokenEnv, f.Token)
	}
	root := newRootCmd()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	err := root.Execute()
	if err != nil {
		if ee := asExit(root, err); ee.msg != "" {
			errb.WriteString("dsh: " + ee.msg + "\n")
		}
	}
	return out.String(), errb.String(), exitStatus(err)
}

func TestWorldCreateGetLsExtendPauseResumeRm(t *testing.T) {
	f := clienttest.New(t, "server-secret")
	out, errOut, st := worldCLI(t, f, "", "world", "create", "demo", "--driver", "docker", "--image", "dsh/base",
		"--ttl", "2h", "--idle-timeout", "10m", "--allow", "github.com:443", "--allow", "10.0.0.0/8",
		"--memory", "512MiB", "--pids", "256", "--cpus", "1.5", "--label", "job=42", "--label", "team=x")
	if st != 0 || out != "demo\n" {
		t.Fatalf("create: status %d, stdout %q, stderr %q; want the name alone", st, out, errOut)
	}
	if !strings.Contains(errOut, "token (shown once; it reaches only this workspace): wst-") {
		t.Errorf("create's stderr does not show the token: %q", errOut)
	}
	out, _, st = worldCLI(t, f, "", "world", "get", "demo", "--json")
	var w workspace.Workspace
	if err := json.Unmarshal([]byte(out), &w); err != nil || st != 0 {
		t.Fatalf("get --json: %v, status %d: %s", err, st, out)
	}
	if w.Driver != "docker" || w.Image != "dsh/base" || w.Limits != (workspace.Limits{Memory: "512MiB", Pids: 256, CPUs: 1.5}) ||
		strings.Join(w.Allow, " ") != "github.com:443 10.0.0.0/8" || w.Labels["job"] != "42" || w.Labels["team"] != "x" ||
		time.Duration(w.IdleTimeout) != 10*time.Minute || time.Until(w.ExpiresAt) < 119*time.Minute {
		t.Errorf("the server got %+v", w)
	}
	out, _, _ = worldCLI(t, f, "", "world", "get", "demo")
	for _, want := range []string{"name:         demo", "limits:       memory 512MiB, pids 256, cpus 1.5", "labels:       job=42,team=x"} {
		if !strings.Contains(out, want) {
			t.Errorf("get: no %q in\n%s", want, out)
		}
	}

	// A generated name; --json prints the whole answer with the token.
	out, _, st = worldCLI(t, f, "", "world", "create", "--json")
	var cr workspace.Created
	if err := json.Unmarshal([]byte(out), &cr); err != nil || st != 0 || !strings.HasPrefix(cr.Workspace.Name, "ws-") || cr.Token == "" {
		t.Fatalf("create --json: %v, status %d: %s", err, st, out)
	}

	out, _, st = worldCLI(t, f, "", "world", "ls")
	if st != 0 || !strings.HasPrefix(out, "NAME ") || !strings.Contains(out, "\ndemo ") || !strings.Contains(out, cr.Workspace.Name) {
		t.Errorf("ls: status %d\n%s", st, out)
	}
	out, _, _ = worldCLI(t, f, "", "world", "ls", "--json")
	var list struct{ Workspaces []workspace.Workspace }
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list.Workspaces) != 2 {
		t.Errorf("ls --json: %v: %s", err, out)
	}

	out, _, st = worldCLI(t, f, "", "world", "extend", "demo", "5h")
	if st != 0 || !strings.HasPrefix(out, "demo expires ") || !(strings.Contains(out, "(in 4h59m") || strings.Contains(out, "(in 5h0m0s)")) {
		t.Errorf("extend: status %d, %q", st, out)
	}
	if out, _, st = worldCLI(t, f, "", "world", "pause", "demo"); st != 0 || out != "demo paused\n" {
		t.Errorf("pause: status %d, %q", st, out)
	}
	_, errOut, st = worldCLI(t, f, "", "world", "exec", "demo", "--", "echo", "hi")
	if st != statusDshFailed || !strings.Contains(errOut, "paused") {
		t.Errorf("exec while paused: status %d, stderr %q; want 125 and the conflict", st, errOut)
	}
	out, _, st = worldCLI(t, f, "", "world", "resume", "demo", "--json")
	if err := json.Unmarshal([]byte(out), &w); err != nil || st != 0 || w.State != workspace.StateRunning {
		t.Errorf("resume --json: status %d: %s", st, out)
	}

	// rm tries every name and fails if one failed.
	out, errOut, st = worldCLI(t, f, "", "world", "rm", "demo", "nope", cr.Workspace.Name)
	if st != 1 || out != "demo\n"+cr.Workspace.Name+"\n" || !strings.Contains(errOut, `removing nope: no such workspace "nope"`) {
		t.Errorf("rm: status %d, stdout %q, stderr %q", st, out, errOut)
	}
	if left := f.Names(); len(left) != 0 {
		t.Errorf("after rm, the server holds %v", left)
	}
	out, _, st = worldCLI(t, f, "", "world", "rm", "nope", "--json")
	var rm struct {
		Removed []string
		Failed  []worldRmFailure
	}
	if err := json.Unmarshal([]byte(out), &rm); err != nil || st != 1 || len(rm.Failed) != 1 || rm.Failed[0].Code != "WORKSPACE_NOT_FOUND" || rm.Failed[0].Status != 404 {
		t.Errorf("rm --json of a missing workspace: status %d: %s", st, out)
	}
}

func TestWorldErrorsAndExitStatuses(t *testing.T) {
	f := clienttest.New(t, "server-secret")
	_, errOut, st := worldCLI(t, f, "", "world", "get", "missing")
	if st != 1 || !strings.Contains(errOut, `dsh: no such workspace "missing"`) || !strings.Contains(errOut, "not_found, HTTP 404") {
		t.Errorf("get missing: status %d, stderr %q", st, errOut)
	}
	out, _, st := worldCLI(t, f, "", "world", "get", "missing", "--json")
	var env struct {
		Error  errorBody
		Status int
	}
	if err := json.Unmarshal([]byte(out), &env); err != nil || st != 1 || env.Error.Code != "WORKSPACE_NOT_FOUND" || env.Status != 404 || !strings.Contains(env.Error.Message, "no such workspace") {
		t.Errorf("get missing --json: status %d: %s", st, out)
	}

	// No token at all, then a token file.
	t.Setenv(worldServerEnv, f.URL())
	t.Setenv(worldTokenEnv, "")
	root := newRootCmd()
	var o bytes.Buffer
	root.SetOut(&o)
	root.SetErr(&o)
	root.SetArgs([]string{"world", "ls", "--json"})
	err := root.Execute()
	if exitStatus(err) != 1 || !strings.Contains(o.String(), `"code":"WORKSPACE_UNAUTHORIZED"`) {
		t.Errorf("ls without a token: status %d: %s", exitStatus(err), o.String())
	}
	tf := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tf, []byte("server-secret\n"), 0o600)
	root = newRootCmd()
	o.Reset()
	root.SetOut(&o)
	root.SetArgs([]string{"world", "ls", "--token-file", tf})
	if err := root.Execute(); err != nil || !strings.HasPrefix(o.String(), "NAME") {
		t.Errorf("ls --token-file: %v: %s", err, o.String())
	}

	// Nothing listening.
	_, errOut, st = worldCLI(t, nil, "", "world", "ls", "--server", "http://127.0.0.1:1")
	if st != 1 || !strings.Contains(errOut, "did not answer") {
		t.Errorf("no server: status %d, stderr %q", st, errOut)
	}
	out, _, _ = worldCLI(t, nil, "", "world", "ls", "--json", "--server", "http://127.0.0.1:1")
	if !strings.Contains(out, `"code":"SERVER_UNREACHABLE"`) {
		t.Errorf("no server --json: %s", out)
	}

	// Usage: status 2, and 125 for exec (as dsh run).
	for _, c := range []struct {
		args []string
		want int
		msg  string
	}{
		{[]string{"world", "get", "Bad_Name"}, 2, "workspace name"},
		{[]string{"world", "create", "--label", "novalue"}, 2, "KEY=VALUE"},
		{[]string{"world", "extend", "x", "soon"}, 2, "positive Go duration"},
		{[]string{"world", "cp", "a:x", "b:y"}, 2, "both SRC and DST"},
		{[]string{"world", "cp", "x", "y"}, 2, "NAME:PATH"},
		{[]string{"world", "exec", "x", "echo"}, 125, "after --"},
		{[]string{"world", "exec", "x", "--env", "NOEQ", "--", "echo"}, 125, "KEY=VALUE"},
		{[]string{"world", "nosuch"}, 2, "unknown command"},
		{[]string{"world", "ls", "--server", "127.0.0.1:8765"}, 2, "http://HOST:PORT"},
	} {
		_, errOut, st := worldCLI(t, f, "", c.args...)
		if st != c.want || !strings.Contains(errOut, c.msg) {
			t.Errorf("%v: status %d, stderr %q; want %d and %q", c.args, st, errOut, c.want, c.msg)
		}
	}
}

func TestWorldExecStreamsAndExitsWithTheStatus(t *testing.T) {
	f := clienttest.New(t, "tok")
	if _, _, st := worldCLI(t, f, "", "world", "create", "ex"); st != 0 {
		t.Fatal("create failed")
	}
	out, errOut, st := worldCLI(t, f, "", "world", "exec", "ex", "--", "interleave")
	if st != 0 || out != "o1\no2\n" || errOut != "e1\n" {
		t.Errorf("interleave: status %d, stdout %q, stderr %q", st, out, errOut)
	}
	if _, errOut, st = worldCLI(t, f, "", "world", "exec", "ex", "--", "exit", "42"); st != 42 || errOut != "exiting 42\n" {
		t.Errorf("exit 42: status %d, stderr %q", st, errOut)
	}
	for sig, want := range map[string]int{"SIGTERM": 143, "killed": 137} {
		if _, _, st = worldCLI(t, f, "", "world", "exec", "ex", "--", "signal", sig); st != want {
			t.Errorf("killed by %s: status %d, want %d", sig, st, want)
		}
	}
	_, errOut, st = worldCLI(t, f, "", "world", "exec", "ex", "--", "no-such-tool")
	if st != statusDshFailed || !strings.Contains(errOut, "executable file not found") {
		t.Errorf("a command that cannot start: status %d, stderr %q", st, errOut)
	}
	out, _, st = worldCLI(t, f, "", "world", "exec", "ex", "--env", "A=1", "--env", "B=2", "--", "env")
	if st != 0 || out != "A=1\nB=2\n" {
		t.Errorf("--env: status %d, %q", st, out)
	}
	out, _, _ = worldCLI(t, f, "", "world", "exec", "ex", "--dir", "sub", "--timeout", "30s", "--", "pwd")
	if out != "/sub timeout=30s\n" {
		t.Errorf("--dir --timeout reached the server as %q", out)
	}
	out, _, _ = worldCLI(t, f, "data\x00in", "world", "exec", "ex", "--stdin", "--", "cat")
	if out != "data\x00in" {
		t.Errorf("--stdin: %q", out)
	}
	_, _, st = worldCLI(t, f, "", "world", "exec", "ex", "--", "cut")
	if st != statusDshFailed {
		t.Errorf("a stream cut before the exit: status %d, want 125", st)
	}

	// --json: the event stream itself, ending with the exit; the status
	// is still the command's.
	out, _, st = worldCLI(t, f, "", "world", "exec", "ex", "--json", "--", "exit", "3")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var first, last workspace.ExecEvent
	if st != 3 || len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &first) != nil || json.Unmarshal([]byte(lines[1]), &last) != nil ||
		string(first.Stderr) != "exiting 3\n" || last.Exit == nil || last.Exit.Code != 3 {
		t.Errorf("exec --json: status %d:\n%s", st, out)
	}
}

func TestWorldCp(t *testing.T) {
	f := clienttest.New(t, "tok")
	worldCLI(t, f, "", "world", "create", "cp")
	dir := t.TempDir()
	src := filepath.Join(dir, "run.sh")
	os.WriteFile(src, []byte("#!/bin/sh\necho hi\n"), 0o750)
	if _, errOut, st := worldCLI(t, f, "", "world", "cp", src, "cp:bin/run.sh"); st != 0 {
		t.Fatalf("cp up: status %d, %s", st, errOut)
	}
	if data, mode, ok := f.File("cp", "bin/run.sh"); !ok || string(data) != "#!/bin/sh\necho hi\n" || mode != "0750" {
		t.Errorf("the server holds %q mode %q (%v); want the file with its mode 0750", data, mode, ok)
	}
	if _, _, st := worldCLI(t, f, "from stdin", "world", "cp", "-", "cp:in.txt"); st != 0 {
		t.Fatal("cp - up failed")
	}
	if data, _, _ := f.File("cp", "in.txt"); string(data) != "from stdin" {
		t.Errorf("cp - up: the server holds %q", data)
	}
	out, _, st := worldCLI(t, f, "", "world", "cp", "cp:in.txt", "-")
	if st != 0 || out != "from stdin" {
		t.Errorf("cp to -: status %d, %q", st, out)
	}
	// Into a directory: its base name.
	out, _, st = worldCLI(t, f, "", "world", "cp", "cp:bin/run.sh", dir, "--json")
	var ans struct {
		From, To string
		Bytes    int64
	}
	if err := json.Unmarshal([]byte(out), &ans); err != nil || st != 0 || ans.To != src || ans.Bytes != 18 {
		t.Errorf("cp down --json: status %d: %s", st, out)
	}
	down := filepath.Join(dir, "copy.txt")
	if _, _, st := worldCLI(t, f, "", "world", "cp", "cp:in.txt", down); st != 0 {
		t.Fatal("cp down failed")
	}
	if b, _ := os.ReadFile(down); string(b) != "from stdin" {
		t.Errorf("cp down wrote %q", b)
	}
	// A missing file leaves nothing behind locally.
	_, errOut, st := worldCLI(t, f, "", "world", "cp", "cp:missing", filepath.Join(dir, "m"))
	if st != 1 || !strings.Contains(errOut, "not_found") {
		t.Errorf("cp of a missing file: status %d, %q", st, errOut)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("after a failed copy the directory holds %v, want run.sh and copy.txt", ents)
	}
	if _, errOut, st := worldCLI(t, f, "", "world", "cp", dir, "cp:d"); st != 2 || !strings.Contains(errOut, "not a regular file") {
		t.Errorf("cp of a directory: status %d, %q", st, errOut)
	}
}

func TestWorldCreateReportsProgress(t *testing.T) {
	f := clienttest.New(t, "tok")
	f.CreateDelay = 300 * time.Millisecond
	old := worldProgressAfter
	worldProgressAfter = 50 * time.Millisecond
	t.Cleanup(func() { worldProgressAfter = old })
	out, errOut, st := worldCLI(t, f, "", "world", "create", "slow")
	if st != 0 || out != "slow\n" || !strings.HasPrefix(errOut, "creating workspace slow...\ncreating workspace slow: done in ") {
		t.Errorf("slow create: status %d, stdout %q, stderr %q", st, out, errOut)
	}
	f.CreateDelay = 0
	if _, errOut, _ := worldCLI(t, f, "", "world", "create", "fast"); strings.Contains(errOut, "creating") {
		t.Errorf("a fast create reported progress: %q", errOut)
	}
}
