package workspace

import (
	"os"
	"testing"

	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/sandbox/native"
)

// TestMain lets the test binary serve as the native driver's init, as
// dsh does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == native.InitArg {
		os.Exit(native.InitMain())
	}
	code := m.Run()
	testenv.RemoveStaticDsh()
	os.Exit(code)
}
