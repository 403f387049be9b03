package main

import (
	"os"
	"testing"

	"github.com/dsh-dev/dsh/internal/testenv"
)

// staticDsh is the static dsh binary of this checkout, built once per
// test run: tests that need dsh as the init of a sandbox (the docker
// driver mounts it into the container) or as a whole program use it.
func staticDsh(t testing.TB) string { return testenv.StaticDsh(t) }

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveStaticDsh()
	os.Exit(code)
}
