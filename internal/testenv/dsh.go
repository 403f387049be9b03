package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// staticDsh is the static dsh binary of this checkout, built once per test
// binary.
var staticDsh struct {
	once      sync.Once
	dir, path string
	err       error
}

// StaticDsh returns a static build of ./cmd/dsh (CGO_ENABLED=0, as the
// init of a docker world and the binary end-to-end tests run must be),
// built once per test binary; RemoveStaticDsh, from TestMain, removes it.
func StaticDsh(t testing.TB) string {
	t.Helper()
	staticDsh.once.Do(func() {
		staticDsh.dir, staticDsh.err = os.MkdirTemp("", "dsh-static-")
		if staticDsh.err != nil {
			return
		}
		staticDsh.path = filepath.Join(staticDsh.dir, "dsh")
		cmd := exec.Command("go", "build", "-trimpath", "-o", staticDsh.path, "github.com/dsh-dev/dsh/cmd/dsh")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			staticDsh.err = fmt.Errorf("building the static dsh binary: %v\n%s", err, out)
		}
	})
	if staticDsh.err != nil {
		t.Fatal(staticDsh.err)
	}
	return staticDsh.path
}

// RemoveStaticDsh removes what StaticDsh built, if anything.
func RemoveStaticDsh() {
	if staticDsh.dir != "" {
		os.RemoveAll(staticDsh.dir)
	}
}
