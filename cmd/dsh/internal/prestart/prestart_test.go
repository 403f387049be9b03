package prestart

import "testing"

// RunLine tells dsh run's command line from the others before the
// command tree exists (to spawn the world's init early).
func TestRunLine(t *testing.T) {
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
		if got := RunLine(c.args); got != c.want {
			t.Errorf("RunLine(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}
