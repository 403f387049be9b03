package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runDsh runs the dsh command tree in-process and returns its output.
func runDsh(t *testing.T, args ...string) (stdout string, err error) {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err = root.Execute()
	return out.String(), err
}

func TestConfigShowReportsSources(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "dsh.yaml")
	if err := os.WriteFile(file, []byte("sandbox:\n  image: my/image:1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DSH_SANDBOX_LIMITS_PIDS", "77")
	out, err := runDsh(t, "config", "show", "--json", "--config", file)
	if err != nil {
		t.Fatalf("dsh config show: %v", err)
	}
	var got struct {
		File     string
		Settings []struct {
			Key    string
			Value  any
			Source string
		}
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	want := map[string]struct {
		value  any
		source string
	}{
		"sandbox.image":       {"my/image:1", "file " + file},
		"sandbox.limits.pids": {float64(77), "env DSH_SANDBOX_LIMITS_PIDS"},
		"sandbox.driver":      {"native", "default"},
	}
	for _, s := range got.Settings {
		if w, ok := want[s.Key]; ok {
			if s.Value != w.value || s.Source != w.source {
				t.Errorf("%s = %v from %q, want %v from %q", s.Key, s.Value, s.Source, w.value, w.source)
			}
			delete(want, s.Key)
		}
	}
	for k := range want {
		t.Errorf("key %s missing from output", k)
	}
}

func TestConfigWithThreeMistakesReportsThree(t *testing.T) {
	file := filepath.Join(t.TempDir(), "bad.yaml")
	bad := "netwrok:\n  default: deny\nsandbox:\n  limits:\n    memory: 12XB\nweb:\n  policy:\n    default: maybe\n"
	if err := os.WriteFile(file, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := runDsh(t, "config", "show", "--config", file)
	if err == nil {
		t.Fatal("dsh config show with a bad file succeeded, want an error")
	}
	msg := err.Error()
	for _, want := range []string{
		"3 configuration problem(s)",
		`netwrok: is not a known setting; did you mean "network"?`,
		`sandbox.limits.memory: "12XB" is not a size`,
		`web.policy.default: "maybe" is not a policy default`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not mention %q:\n%s", want, msg)
		}
	}
	if code := run([]string{"config", "show", "--config", file}); code == 0 {
		t.Errorf("exit status = 0, want non-zero")
	}
}
