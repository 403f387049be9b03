package conformance

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

const probePkg = "github.com/dsh-dev/dsh/execworld/conformance/internal/probe"

var probeBin struct {
	once sync.Once
	data []byte
	err  error
}

// BuildProbe compiles the suite's in-world probe once per test binary,
// statically (CGO_ENABLED=0), so it runs on any Linux root the driver
// provides, and returns the binary.
func BuildProbe() ([]byte, error) {
	probeBin.once.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			probeBin.err = fmt.Errorf("the conformance probe is built with the go tool, which is not on PATH: %w", err)
			return
		}
		dir, err := os.MkdirTemp("", "dsh-probe-build-")
		if err != nil {
			probeBin.err = err
			return
		}
		defer os.RemoveAll(dir)
		out := filepath.Join(dir, "probe")
		cmd := exec.Command(goBin, "build", "-trimpath", "-o", out, probePkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			probeBin.err = fmt.Errorf("building the conformance probe: %v\n%s", err, b)
			return
		}
		probeBin.data, probeBin.err = os.ReadFile(out)
	})
	return probeBin.data, probeBin.err
}

// pattern is byte i of the probe's emit output (internal/probe.Pattern).
func pattern(i int) byte { return byte('A' + i%61) }
