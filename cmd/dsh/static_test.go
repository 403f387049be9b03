package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var static struct {
	once sync.Once
	dir  string
	path string
	err  error
	out  []byte
}

// staticDsh builds the static dsh binary once per test run and returns its
// path: tests that need dsh as the init of a sandbox (the docker driver
// mounts it into the container) or as a whole program use it.
func staticDsh(t testing.TB) string {
	t.Helper()
	static.once.Do(func() {
		static.dir, static.err = os.MkdirTemp("", "dsh-static-")
		if static.err != nil {
			return
		}
		static.path = filepath.Join(static.dir, "dsh")
		build := exec.Command("go", "build", "-trimpath", "-o", static.path, ".")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		static.out, static.err = build.CombinedOutput()
	})
	if static.err != nil {
		t.Fatalf("building static dsh: %v\n%s", static.err, static.out)
	}
	return static.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if static.dir != "" {
		os.RemoveAll(static.dir)
	}
	os.Exit(code)
}
