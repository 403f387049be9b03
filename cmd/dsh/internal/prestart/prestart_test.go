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

// Limited reads, before the command tree exists, whether a run line
// turns limits off: --no-limits among run's flags (not the command's),
// else DSH_SANDBOX_LIMITS_OFF.
func TestLimited(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  string
		want bool
	}{
		{[]string{"run", "--", "true"}, "", true},
		{[]string{"run", "--no-limits", "--", "true"}, "", false},
		{[]string{"run", "--no-limits", "true"}, "", false},
		{[]string{"run", "--no-limits=true", "true"}, "", false},
		{[]string{"run", "--no-limits=false", "true"}, "true", true},
		{[]string{"--config", "x.yaml", "run", "--workspace", "/w", "-e", "A=1", "--no-limits", "--", "true"}, "", false},
		{[]string{"run", "--workspace=/w", "--no-limits", "true"}, "", false},
		// the command's own flags, after "--" or the command
		{[]string{"run", "--", "tool", "--no-limits"}, "", true},
		{[]string{"run", "tool", "--no-limits"}, "", true},
		{[]string{"run", "--json", "--", "true"}, "", true},
		{[]string{"run", "--", "true"}, "true", false},
		{[]string{"run", "--", "true"}, "1", false},
		{[]string{"run", "--", "true"}, "0", true},
		{[]string{"run", "--", "true"}, "maybe", true},
	} {
		getenv := func(k string) string {
			if k == "DSH_SANDBOX_LIMITS_OFF" {
				return c.env
			}
			return ""
		}
		if got := Limited(c.args, getenv); got != c.want {
			t.Errorf("Limited(%q) with DSH_SANDBOX_LIMITS_OFF=%q = %v, want %v", c.args, c.env, got, c.want)
		}
	}
}
