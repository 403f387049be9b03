package e2e

import (
	"os"
	"testing"

	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/sandbox/native"
)

func TestMain(m *testing.M) {
	// The native driver re-executes this binary as the world's init.
	if len(os.Args) > 1 && os.Args[1] == native.InitArg {
		os.Exit(native.InitMain())
	}
	code := m.Run()
	testenv.RemoveStaticDsh()
	os.Exit(code)
}
