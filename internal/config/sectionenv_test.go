package config

import (
	"errors"
	"strings"
	"testing"
)

// A variable named after a section is refused, with the section's keys
// as the fix; settings, empty variables and dsh's own are not, and
// UnknownEnv leaves the refusal to SectionEnv.
func TestSectionEnvRefused(t *testing.T) {
	env := []string{"DSH_WEB_FETCH=x", "DSH_WEB_FETCH_TIMEOUT=3s", "DSH_SANDBOX_LIMITS=", "DSH_TEST_X=1", "PATH=/bin"}
	got := SectionEnv(env)
	if len(got) != 1 {
		t.Fatalf("SectionEnv = %v, want one problem, for DSH_WEB_FETCH", got)
	}
	var ke *KeyError
	if !errors.As(got[0], &ke) || ke.Key != "web.fetch" || !strings.Contains(ke.Msg, "DSH_WEB_FETCH names the section") || !strings.Contains(ke.Msg, "DSH_WEB_FETCH_") {
		t.Errorf("problem = %v, want web.fetch named, with one of its keys' variables as the fix", got[0])
	}
	for _, w := range UnknownEnv(env) {
		if strings.Contains(w, "DSH_WEB_FETCH ") || strings.HasPrefix(w, "DSH_WEB_FETCH is") {
			t.Errorf("UnknownEnv also warns, wrongly that it is ignored: %s", w)
		}
	}
}
