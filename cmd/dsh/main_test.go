package main

import (
	"bytes"
	"fmt"
	"testing"
)

// isRunLine tells dsh run's command line from the others before the
// command tree exists (to spawn the world's init early).
func TestIsRunLine(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"run", "--", "true"}, true},
		{[]string{"run"}, true},
		{[]string{"--config", "x.yaml", "run", "true"}, true},
		{[]string{"--config=x.yaml", "run", "true"}, true},
		{[]string{"version"}, false},
		{[]string{"world", "run"}, false},
		{[]string{"--config", "run"}, false},
		{[]string{"help", "run"}, false},
		{nil, false},
	} {
		if got := isRunLine(c.args); got != c.want {
			t.Errorf("isRunLine(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}

// A run line is served by the run-only tree exactly as by the whole one:
// the same help, the same usage errors.
func TestRunOnlyTreeIsRunsTree(t *testing.T) {
	for _, args := range [][]string{{"run", "--help"}, {"run", "--no-such-flag"}, {"--config=/nonexistent", "run", "--help"}} {
		if !isRunLine(args) {
			t.Fatalf("isRunLine(%q) = false", args)
		}
		var outs [2]string
		for i, runOnly := range []bool{false, true} {
			root := newRoot(runOnly)
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&out)
			root.SetArgs(args)
			_, err := root.ExecuteC()
			outs[i] = fmt.Sprintf("%s\nerr: %v", out.String(), err)
		}
		if outs[0] != outs[1] {
			t.Errorf("%q: the whole tree says\n%s\nthe run-only tree says\n%s", args, outs[0], outs[1])
		}
	}
}
