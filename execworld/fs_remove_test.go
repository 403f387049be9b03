package execworld_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/dsh-dev/dsh/execworld"
)

func TestRemove(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(root, "f"), []byte("x"), 0o644))
	must(os.MkdirAll(filepath.Join(root, "d/sub"), 0o755))
	must(os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o644))
	must(os.Symlink(outside, filepath.Join(root, "out")))
	must(os.Symlink(filepath.Join(root, "f"), filepath.Join(root, "link")))
	f, err := execworld.OpenFS(root)
	must(err)
	defer f.Close()

	for _, p := range []string{"out/secret", "../" + filepath.Base(outside) + "/secret", filepath.Join(outside, "secret")} {
		if err := f.Remove(p); !errors.Is(err, execworld.ErrEscape) {
			t.Errorf("Remove(%q) = %v, want ErrEscape", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "secret")); err != nil {
		t.Fatalf("a file outside the workspace was removed: %v", err)
	}
	if err := f.Remove("d"); !errors.Is(err, syscall.ENOTEMPTY) {
		t.Errorf("Remove of a non-empty directory = %v, want ENOTEMPTY", err)
	}
	must(f.Remove("link"))
	if _, err := os.Stat(filepath.Join(root, "f")); err != nil {
		t.Errorf("removing a symlink removed the file it names: %v", err)
	}
	must(f.Remove("out"))
	must(f.Remove("f"))
	must(f.Remove("d/sub"))
	if err := f.Remove("f"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Remove of a missing file = %v, want ErrNotExist", err)
	}
	for _, p := range []string{"", ".", root} {
		if err := f.Remove(p); err == nil {
			t.Errorf("Remove(%q) removed the root", p)
		}
	}
	if _, err := os.Stat(root); err != nil {
		t.Fatal(err)
	}
}
