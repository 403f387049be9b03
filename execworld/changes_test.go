package execworld

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/dsh-dev/dsh/sandbox"
	"golang.org/x/sys/unix"
)

// TestFSRefusesWritesOutsideRW: FS works on the real workspace, so in ro
// and overlay mode its writes (and edits) are refused with EROFS; reads
// still work.
func TestFSRefusesWritesOutsideRW(t *testing.T) {
	for _, mode := range sandbox.WorkspaceModes {
		t.Run(string(mode), func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "f"), []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
			fsys, err := OpenFS(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer fsys.Close()
			fsys.readOnly = fsReadOnly(mode)
			_, werr := fsys.WriteFile("new", []byte("x"), nil)
			_, eerr := fsys.Edit("f", "old", "new", 1<<20, nil)
			_, rerr := fsys.ReadFile("f", 1<<20)
			if rerr != nil {
				t.Errorf("ReadFile in mode %s: %v", mode, rerr)
			}
			if mode == sandbox.WorkspaceRW {
				if werr != nil || eerr != nil {
					t.Errorf("rw: WriteFile %v, Edit %v; want both to work", werr, eerr)
				}
				return
			}
			for op, err := range map[string]error{"WriteFile": werr, "Edit": eerr} {
				if !errors.Is(err, unix.EROFS) {
					t.Errorf("%s in mode %s = %v, want EROFS", op, mode, err)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "new")); !os.IsNotExist(err) {
				t.Errorf("mode %s: WriteFile created the file (%v)", mode, err)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "f")); string(b) != "old" {
				t.Errorf("mode %s: Edit changed the file to %q", mode, b)
			}
		})
	}
}
