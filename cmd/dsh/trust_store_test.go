package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/dsh-dev/dsh/internal/testenv"
)

// No world can write (or read) dsh's own configuration directory, where
// the trust store and the user's trusted config live, even when it lies
// inside the workspace (here $XDG_CONFIG_HOME is the workspace's .config;
// with --workspace-home it is ~/.config): a world that could write
// trusted.json or config.yaml would widen its next run.
func TestWorldCannotWriteTheTrustStore(t *testing.T) {
	bin := staticDsh(t)
	for _, driver := range []string{"native", "docker"} {
		t.Run(driver, func(t *testing.T) {
			if driver == "docker" {
				testenv.RequireDocker(t)
			}
			for _, exists := range []bool{true, false} {
				ws := t.TempDir()
				if err := os.Chmod(ws, 0o777); err != nil {
					t.Fatal(err)
				}
				cfg := filepath.Join(ws, ".config")
				dir := filepath.Join(cfg, "dsh")
				store := filepath.Join(dir, "trusted.json")
				const want = `{"version":1,"files":[]}`
				if exists {
					if err := os.MkdirAll(dir, 0o777); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(store, []byte(want), 0o666); err != nil {
						t.Fatal(err)
					}
				}
				// The world tries everything a writer would: write in place,
				// replace, create the directory.
				script := `cat .config/dsh/trusted.json 2>/dev/null && echo READ
mkdir -p .config/dsh 2>/dev/null
echo '{"version":1,"files":[{"path":"x","sha256":"y"}]}' > .config/dsh/trusted.json 2>/dev/null && echo WROTE
echo 'sandbox: {limits: {off: true}}' > .config/dsh/config.yaml 2>/dev/null && echo WROTE-CONFIG
true`
				cmd := exec.Command(bin, "run", "--driver", driver, "--", "sh", "-c", script)
				cmd.Dir = ws
				cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+cfg)
				var out, errOut bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errOut
				if err := cmd.Run(); err != nil {
					var ee *exec.ExitError
					if !errors.As(err, &ee) {
						t.Fatal(err)
					}
					t.Fatalf("dsh run --driver %s: %v\nstdout: %s\nstderr: %s", driver, err, out.String(), errOut.String())
				}
				if bytes.Contains(out.Bytes(), []byte("READ")) || bytes.Contains(out.Bytes(), []byte("WROTE")) {
					t.Errorf("store existing=%v: a %s world read or wrote dsh's config directory:\n%s", exists, driver, out.String())
				}
				got, err := os.ReadFile(store)
				switch {
				case exists && string(got) != want:
					t.Errorf("store existing=%v: trusted.json is now %q (err %v), want it untouched", exists, got, err)
				case !exists && err == nil:
					t.Errorf("store existing=%v: a %s world created trusted.json: %q", exists, driver, got)
				}
				if _, err := os.Stat(filepath.Join(dir, "config.yaml")); err == nil {
					t.Errorf("store existing=%v: a %s world created the user's config.yaml", exists, driver)
				}
			}
		})
	}
}
