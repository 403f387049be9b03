package testenv

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
		if staticDsh.err = buildEmbeddedInit(staticDsh.dir); staticDsh.err != nil {
			return
		}
		cmd := exec.Command("go", "build", "-trimpath", "-tags", "embedinit", "-o", staticDsh.path, "github.com/dsh-dev/dsh/cmd/dsh")
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

// buildEmbeddedInit builds the native sandbox's small init (cmd/dsh-init)
// as `make build` does and puts it where dsh's build tag embedinit embeds
// it from (sandbox/native/initbin), so the binary the tests run is the one
// dsh ships.
func buildEmbeddedInit(tmp string) error {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("finding the module root: %v", err)
	}
	dst := filepath.Join(filepath.Dir(string(bytes.TrimSpace(out))), "sandbox", "native", "initbin", "dsh-init")
	bin := filepath.Join(tmp, "dsh-init")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags="+InitLDFlags(), "-o", bin, "github.com/dsh-dev/dsh/cmd/dsh-init")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building the sandbox init: %v\n%s", err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	return WriteEmbeddedInit(dst, data)
}

// WriteEmbeddedInit puts the init binary data at dst (the package's
// initbin/dsh-init) and its SHA-256 line beside it (dsh-init.sum), as
// `make build` does: the build tag embedinit embeds both. Each is
// replaced by a rename, so test binaries building at once never see a
// partial one.
func WriteEmbeddedInit(dst string, data []byte) error {
	sum := sha256.Sum256(data)
	if err := replaceFile(dst+".sum", []byte(hex.EncodeToString(sum[:])+"  dsh-init\n"), 0o644); err != nil {
		return err
	}
	return replaceFile(dst, data, 0o755)
}

func replaceFile(dst string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(dst), ".dsh-init-")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), mode)
	}
	if err == nil {
		err = os.Rename(f.Name(), dst)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// InitLDFlags are the linker flags `make build` gives cmd/dsh-init: with
// its entry point where it has one (amd64, cmd/dsh-init/entry_amd64.s).
func InitLDFlags() string {
	if runtime.GOARCH == "amd64" {
		return "-s -w -E=main.earlyEntry"
	}
	return "-s -w"
}
