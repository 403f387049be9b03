package native

import (
	"os"
	"testing"
)

// helperArg makes the test binary run testHelper instead of the tests:
// tests start it inside worlds (as /proc/self/exe) to try things a shell
// cannot, such as individual syscalls.
const helperArg = "__native-test-helper"

// TestMain lets the test binary serve as the sandbox init, the way dsh
// does (Open re-executes this binary with InitArg), and as the helper.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case InitArg:
			os.Exit(InitMain())
		case helperArg:
			os.Exit(testHelper(os.Args[2:]))
		}
	}
	os.Exit(m.Run())
}
