package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestScripts runs the CLI contracts in testdata/script/*.txtar over the
// built static binary, the way the Go team tests the go command: each
// script runs dsh as a user would and asserts its exit status, stdout
// and stderr. Scripts run with no user configuration and an empty work
// directory of their own.
func TestScripts(t *testing.T) {
	bin := staticDsh(t)
	testscript.Run(t, testscript.Params{
		Dir: filepath.Join("testdata", "script"),
		Setup: func(e *testscript.Env) error {
			e.Setenv("PATH", filepath.Dir(bin)+":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
			e.Setenv("XDG_CONFIG_HOME", filepath.Join(e.WorkDir, ".config"))
			e.Setenv("HOME", filepath.Join(e.WorkDir, "home"))
			return nil
		},
		Condition: scriptCondition,
	})
}

// scriptCondition answers the conditions scripts may test beyond
// testscript's own: [root] when the tests run as root.
func scriptCondition(cond string) (bool, error) {
	switch cond {
	case "root":
		return os.Geteuid() == 0, nil
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}
