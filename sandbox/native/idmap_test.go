package native

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/sandbox"
)

// A root dsh's world runs as the workspace's owner, in an unprivileged
// host range: what it creates in the workspace belongs to the owner on
// the host, what the owner has there it may change, and it holds no
// host id outside the range.
func TestRootWorldRunsAsWorkspaceOwner(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireUserNS(t)
	const owner = 4321
	ws := hostTempDir(t)
	os.Chmod(ws, 0o700) // only the owner (and the idmapped mount) reach it
	os.Chown(ws, owner, owner)
	mine := filepath.Join(ws, "owners-file")
	os.WriteFile(mine, []byte("old\n"), 0o600)
	os.Chown(mine, owner, owner)
	out, err := sh(t, sandbox.DefaultSpec(ws), `echo id=$(id -u):$(id -g); echo new > `+mine+` && echo owners-file=written
mkdir made-dir && echo made > made-dir/made-file && echo made=ok
stat -c ws-owner=%u:%g `+ws+`; cat /proc/self/uid_map /proc/self/gid_map`)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	want := []string{fmt.Sprintf("id=%d:%d\n", owner, owner), "owners-file=written\n", "made=ok\n",
		fmt.Sprintf("ws-owner=%d:%d\n", owner, owner),
		fmt.Sprintf("%d %d %d", 0, DefaultIDBase, idRangeSize)}
	for _, w := range want {
		if !strings.Contains(strings.Join(strings.Fields(out), " ")+" ", strings.Join(strings.Fields(w), " ")) {
			t.Errorf("world output lacks %q:\n%s", w, out)
		}
	}
	for _, p := range []string{"made-dir", "made-dir/made-file", "owners-file"} {
		fi, err := os.Stat(filepath.Join(ws, p))
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != owner || st.Gid != owner {
			t.Errorf("%s is owned by %d:%d on the host, want the workspace owner %d:%d", p, st.Uid, st.Gid, owner, owner)
		}
	}
}

// A root dsh's overlay world works on a workspace of another owner, and
// changes a file of a third one there: the init gives the upper layer
// the workspace's owner and copies the file up with the capabilities of
// the namespace's root, which it must hold for its setup as it did when
// it was that root at its execve.
func TestRootOverlayWorldOfAnotherOwner(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireUserNS(t)
	const owner, other = 4321, 4322
	ws := hostTempDir(t)
	os.Chown(ws, owner, owner)
	shared := filepath.Join(ws, "shared")
	os.WriteFile(shared, []byte("old\n"), 0o666)
	os.Chmod(shared, 0o666)
	os.Chown(shared, other, other)
	spec := sandbox.DefaultSpec(ws)
	spec.WorkspaceMode = sandbox.WorkspaceOverlay
	out, err := sh(t, spec, `echo id=$(id -u); echo new >> shared && echo appended; stat -c shared=%u:%g shared; echo made > made && echo made=ok`)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	for _, w := range []string{fmt.Sprintf("id=%d\n", owner), "appended\n", fmt.Sprintf("shared=%d:%d\n", other, other), "made=ok\n"} {
		if !strings.Contains(out, w) {
			t.Errorf("world output lacks %q:\n%s", w, out)
		}
	}
	if b, _ := os.ReadFile(shared); string(b) != "old\n" {
		t.Errorf("the host's %s is %q: an overlay world changed it", shared, b)
	}
}

// Even as uid 0 inside (Spec.User), a world cannot read a host file only
// host root may read, though no mask names it.
func TestRootWorldIsNotHostRoot(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireUserNS(t)
	dir := hostTempDir(t)
	os.Chmod(dir, 0o755)
	secret := filepath.Join(dir, "root-only")
	os.WriteFile(secret, []byte("SECRET"), 0o600)
	spec := sandbox.DefaultSpec(t.TempDir())
	spec.User = &specs.User{UID: 0, GID: 0}
	out, err := sh(t, spec, `echo id=$(id -u); cat `+secret+` 2>&1; stat -c owner=%u `+secret+`; chmod 0644 `+secret+` 2>&1; echo end`)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	if strings.Contains(out, "SECRET") || !strings.Contains(out, "id=0\n") || !strings.Contains(out, "owner=65534\n") || !strings.Contains(out, "end") {
		t.Errorf("uid 0 inside a root dsh's world:\n%s", out)
	}
	if fi, _ := os.Stat(secret); fi.Mode().Perm() != 0o600 {
		t.Errorf("the world changed the host file's mode to %v", fi.Mode())
	}
}

// An idmapping range that would include host root is refused
// (initspawn.Subordinate reads the subordinate ranges).
func TestWorldIDRange(t *testing.T) {
	if _, err := worldIDRange(1<<32 - 100); err == nil {
		t.Error("a range past 2^32 was accepted")
	}
	if r, err := worldIDRange(5 << 20); err != nil || r.uid != 5<<20 || r.gid != 5<<20 {
		t.Errorf("worldIDRange(5<<20) = %+v, %v", r, err)
	}
}
