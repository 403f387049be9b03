package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCopyInitIsContentAddressed: the init is copied once per content,
// executable, and a relative directory is refused.
func TestCopyInitIsContentAddressed(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "dsh")
	if err := os.WriteFile(exe, []byte("binary one"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "state", "init")
	a, err := copyInit(exe, dir)
	if err != nil {
		t.Fatalf("copyInit: %v", err)
	}
	if b, _ := os.ReadFile(a); !bytes.Equal(b, []byte("binary one")) {
		t.Errorf("copy holds %q", b)
	}
	if fi, _ := os.Stat(a); fi == nil || fi.Mode().Perm() != 0o755 || !strings.HasPrefix(filepath.Base(a), "dsh-init-") {
		t.Errorf("copy %s mode %v, want dsh-init-* 0755", a, fi)
	}
	again, err := copyInit(exe, dir)
	if err != nil || again != a {
		t.Errorf("second copyInit = %q, %v; want the same path %q", again, err, a)
	}
	// A file of that name with other content is replaced, not trusted.
	os.WriteFile(a, []byte("tampered"), 0o755)
	if again, err := copyInit(exe, dir); err != nil || again != a {
		t.Fatalf("copyInit over a tampered copy = %q, %v", again, err)
	}
	if b, _ := os.ReadFile(a); !bytes.Equal(b, []byte("binary one")) {
		t.Errorf("a tampered copy was kept: %q", b)
	}
	os.WriteFile(exe, []byte("binary two"), 0o755)
	other, err := copyInit(exe, dir)
	if err != nil || other == a {
		t.Errorf("copyInit of new content = %q, %v; want a new path beside %q", other, err, a)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("%d files in the init dir, want the 2 copies (no temporary left)", len(ents))
	}
	if _, err := copyInit(exe, "rel/dir"); err == nil {
		t.Error("copyInit into a relative directory succeeded")
	}
}

// TestDockerOptionsNameTheEnvOnFailure: an unusable $DSH_DOCKER_INIT_DIR
// is an error naming the variable and the fix.
func TestDockerOptionsNameTheEnvOnFailure(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	t.Setenv(dockerInitDirEnv, filepath.Join(file, "sub"))
	_, err := dockerOptions("")
	if err == nil || !strings.Contains(err.Error(), "$DSH_DOCKER_INIT_DIR=") || !strings.Contains(err.Error(), "same path") {
		t.Errorf("dockerOptions = %v, want an error naming $DSH_DOCKER_INIT_DIR and the fix", err)
	}
	t.Setenv(dockerInitDirEnv, "")
	if o, err := dockerOptions("img"); err != nil || o.InitPath != "" || o.Image != "img" {
		t.Errorf("dockerOptions without the variable = %+v, %v; want the running binary", o, err)
	}
}
