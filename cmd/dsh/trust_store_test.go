package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/sandbox"
)

// No world can write (or read) dsh's own configuration directory, where
// the trust store and the user's trusted config live, even when it lies
// inside the workspace (here $XDG_CONFIG_HOME is the workspace's .config;
// with --workspace-home it is ~/.config): a world that could write
// trusted.json or config.yaml would widen its next run.
func TestWorldCannotWriteTheTrustStore(t *testing.T) {
	for _, leg := range []string{"native", "native-unprivileged", "docker"} {
		t.Run(leg, func(t *testing.T) {
			bin := staticDsh(t)
			driver, args := leg, []string{}
			var cred *syscall.Credential
			switch leg {
			case "docker":
				testenv.RequireDocker(t)
			case "native-unprivileged":
				// nobody, with no cgroup to write (--no-limits), from a
				// directory every user can reach.
				testenv.RequireRoot(t)
				testenv.RequireUserNS(t)
				driver, args = "native", []string{"--no-limits"}
				cred = &syscall.Credential{Uid: 65534, Gid: 65534}
				bin = publicCopy(t, bin)
			}
			for _, exists := range []bool{true, false} {
				ws := publicDir(t)
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
					// World-writable, so that only the mask keeps any
					// identity out.
					os.Chmod(cfg, 0o777)
					os.Chmod(dir, 0o777)
					os.Chmod(store, 0o666)
				}
				// The world tries everything a writer would: write in place,
				// replace, create the directory, move it or its parent
				// away (with the mask) and make its own in its place.
				script := `cat .config/dsh/trusted.json 2>/dev/null && echo READ
mkdir -p .config/dsh 2>/dev/null
echo '{"version":1,"files":[{"path":"x","sha256":"y"}]}' > .config/dsh/trusted.json 2>/dev/null && echo WROTE
echo 'sandbox: {limits: {off: true}}' > .config/dsh/config.yaml 2>/dev/null && echo WROTE-CONFIG
mv .config .config-moved 2>/dev/null && echo MOVED-PARENT
mv .config/dsh .config/dsh-moved 2>/dev/null && echo MOVED-DIR
mkdir -p .config/dsh 2>/dev/null
echo 'sandbox: {limits: {off: true}}' > .config/dsh/config.yaml 2>/dev/null && echo WROTE-AFTER-MOVE
true`
				cmd := exec.Command(bin, append(append([]string{"run", "--driver", driver}, args...), "--", "sh", "-c", script)...)
				cmd.Dir = ws
				cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+cfg)
				if cred != nil {
					cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
					cmd.Env = append(cmd.Env, "HOME="+publicDir(t), "TMPDIR="+publicDir(t))
				}
				var out, errOut bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errOut
				if err := cmd.Run(); err != nil {
					var ee *exec.ExitError
					if !errors.As(err, &ee) {
						t.Fatal(err)
					}
					t.Fatalf("dsh run (%s): %v\nstdout: %s\nstderr: %s", leg, err, out.String(), errOut.String())
				}
				if bytes.Contains(out.Bytes(), []byte("READ")) || bytes.Contains(out.Bytes(), []byte("WROTE")) || bytes.Contains(out.Bytes(), []byte("MOVED")) {
					t.Errorf("store existing=%v: a %s world read or wrote dsh's config directory:\n%s", exists, leg, out.String())
				}
				got, err := os.ReadFile(store)
				switch {
				case exists && string(got) != want:
					t.Errorf("store existing=%v: trusted.json is now %q (err %v), want it untouched", exists, got, err)
				case !exists && err == nil:
					t.Errorf("store existing=%v: a %s world created trusted.json: %q", exists, leg, got)
				}
				if _, err := os.Stat(filepath.Join(dir, "config.yaml")); err == nil {
					t.Errorf("store existing=%v: a %s world created the user's config.yaml", exists, leg)
				}
			}
		})
	}
}

// publicDir is a temporary directory every user may write (t.TempDir's
// parents are private to root).
func publicDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "dsh-trust-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if err := os.Chmod(d, 0o777); err != nil {
		t.Fatal(err)
	}
	return d
}

// publicCopy is a copy of the binary bin every user may run.
func publicCopy(t *testing.T, bin string) string {
	t.Helper()
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	d := publicDir(t)
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(d, "dsh")
	if err := os.WriteFile(p, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// A workspace inside dsh's config directory is refused: the world would
// write beside the trust store.
func TestRunRefusesAWorkspaceInTheConfigDir(t *testing.T) {
	bin := staticDsh(t)
	cfg := t.TempDir()
	ws := filepath.Join(cfg, "dsh", "proj")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--", "touch", "../trusted.json")
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+cfg)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 125 || !bytes.Contains(out, []byte("is inside dsh's config directory")) {
		t.Errorf("dsh run in %s = %v, %s; want 125 naming the config directory", ws, err, out)
	}
	if _, err := os.Stat(filepath.Join(cfg, "dsh", "trusted.json")); err == nil {
		t.Error("the world created trusted.json")
	}
}

// dsh's config directory reached through a link inside the workspace (a
// dotfiles checkout: .config itself, or .config/dsh, a link into it) is
// refused: the directories on the way are pinned, but a link could be
// re-pointed by the world to a directory of its own.
func TestConfigDirBehindALinkRefused(t *testing.T) {
	for _, layout := range []string{".config", ".config/dsh"} {
		ws := t.TempDir()
		os.MkdirAll(filepath.Join(ws, "dotfiles/dsh"), 0o700)
		os.MkdirAll(filepath.Join(ws, ".config"), 0o700)
		if layout == ".config" {
			os.Remove(filepath.Join(ws, ".config"))
			os.Symlink("dotfiles", filepath.Join(ws, ".config"))
		} else {
			os.Symlink("../dotfiles/dsh", filepath.Join(ws, ".config/dsh"))
		}
		t.Setenv("XDG_CONFIG_HOME", filepath.Join(ws, ".config"))
		err := hideConfigDir(sandbox.DefaultSpec(ws))
		if err == nil || !strings.Contains(err.Error(), "symbolic link "+filepath.Join(ws, layout)) || !strings.Contains(err.Error(), "XDG_CONFIG_HOME") {
			t.Errorf("%s a link: hideConfigDir = %v, want refused naming the link and the fix", layout, err)
		}
	}
	// A plain directory, and one outside the workspace, are masked.
	ws := t.TempDir()
	for _, cfg := range []string{filepath.Join(ws, ".config"), t.TempDir()} {
		t.Setenv("XDG_CONFIG_HOME", cfg)
		spec := sandbox.DefaultSpec(ws)
		if err := hideConfigDir(spec); err != nil || !slices.Contains(spec.Masks, filepath.Join(cfg, "dsh")) {
			t.Errorf("XDG_CONFIG_HOME %s: hideConfigDir = %v, masks %v; want it masked", cfg, err, spec.Masks)
		}
	}
}
