package execworld_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/internal/testenv"
)

// A root dsh writing on a world's behalf (write_file, edit_file, PUT
// files/) makes what a world running as the workspace's owner can go on
// writing: a new file or directory takes the owner of the directory it
// is made in, a replaced file keeps its own owner.
func TestWriteFileOwner(t *testing.T) {
	testenv.RequireRoot(t)
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chown(ws, 4242, 4343)
	mustWrite(t, filepath.Join(ws, "theirs"), "x")
	os.Chown(filepath.Join(ws, "theirs"), 5151, 5252)
	fsys, err := execworld.OpenFS(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	if _, err := fsys.WriteFile("notes/deep/new.txt", []byte("new"), &execworld.WriteOptions{MkdirAll: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.WriteFile("theirs", []byte("replaced"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.Edit("notes/deep/new.txt", "new", "edited", 1<<20, nil); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string][2]uint32{
		"notes":              {4242, 4343},
		"notes/deep":         {4242, 4343},
		"notes/deep/new.txt": {4242, 4343},
		"theirs":             {5151, 5252},
	} {
		fi, err := os.Lstat(filepath.Join(ws, p))
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if got := [2]uint32{st.Uid, st.Gid}; got != want {
			t.Errorf("%s belongs to %d:%d after a write by root, want %d:%d", p, got[0], got[1], want[0], want[1])
		}
	}
}
