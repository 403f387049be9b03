package main

import (
	"testing"

	"github.com/dsh-dev/dsh/internal/config"
)

// The variables dsh's commands read themselves are no configuration key,
// so dsh must not warn that they are ignored.
func TestOwnEnvIsNotWarnedAbout(t *testing.T) {
	for _, name := range []string{serveTokenEnv, worldServerEnv, worldTokenEnv} {
		if w := config.UnknownEnv([]string{name + "=x"}); len(w) != 0 {
			t.Errorf("%s: %q, want no warning (add it to config.InternalEnv)", name, w)
		}
	}
}
