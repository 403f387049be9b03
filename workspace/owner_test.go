package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/internal/testenv"
)

// With Options.Owner, files/ of a new workspace and of a pooled world
// is the owner's; the workspace's directory and its state stay this
// process's and private.
func TestWorkspaceOwnerOwnsTheFiles(t *testing.T) {
	testenv.RequireRoot(t)
	owner := &FileOwner{UID: 4242, GID: 4343}
	tmpl := Template{Driver: "native", Limits: Limits{Memory: "32MiB", Pids: 64}}
	m, _ := newMgr(t, &Options{Owner: owner, Pool: []PoolSpec{{Template: tmpl, Size: 1}}})
	if !waitFor(5*time.Second, func() bool { return m.pools[0].readyCount() == 1 }) {
		t.Fatal("the pool opened no world")
	}
	create(t, m, &CreateRequest{Name: "own"})
	create(t, m, &CreateRequest{Name: "pooled", Template: tmpl})
	for _, name := range []string{"own", "pooled"} {
		dir := dirOf(t, m, name)
		want := map[string]struct {
			uid, gid int
			mode     os.FileMode
		}{
			filesDir:   {4242, 4343, os.ModeDir | 0o755},
			".":        {os.Geteuid(), os.Getegid(), os.ModeDir | 0o700},
			recordFile: {os.Geteuid(), os.Getegid(), 0o600},
		}
		for rel, w := range want {
			fi, err := os.Lstat(filepath.Join(dir, rel))
			if err != nil {
				t.Fatal(err)
			}
			st := fi.Sys().(*syscall.Stat_t)
			if int(st.Uid) != w.uid || int(st.Gid) != w.gid || fi.Mode() != w.mode {
				t.Errorf("%s: %s of workspace %s is %d:%d %v, want %d:%d %v", name, rel, dir, st.Uid, st.Gid, fi.Mode(), w.uid, w.gid, w.mode)
			}
		}
	}
}

// Without Owner, files/ is this process's, as before.
func TestWorkspaceOwnerDefault(t *testing.T) {
	m, _ := newMgr(t, &Options{})
	create(t, m, &CreateRequest{Name: "mine"})
	fi, err := os.Stat(filepath.Join(dirOf(t, m, "mine"), filesDir))
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != os.Geteuid() {
		t.Errorf("files/ without an Owner belongs to uid %d, want this process's %d", st.Uid, os.Geteuid())
	}
}

func TestWorkspaceOwnerRefusesRoot(t *testing.T) {
	for _, o := range []FileOwner{{0, 1000}, {1000, 0}, {-1, 5}} {
		_, err := New(&Options{Root: t.TempDir(), Opener: newFakeOpener(), Owner: &o})
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("New with Owner %d:%d = %v, want ErrInvalid", o.UID, o.GID, err)
		}
	}
}
