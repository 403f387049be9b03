package docker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/dsh-dev/dsh/sandbox"
)

// A world is the Spec's user, else its workspace's owner, and never the
// host's root: a root-owned workspace makes it MappedUID, idmapped.
func TestWorldIdentity(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making workspaces of other owners needs root")
	}
	ws := t.TempDir()
	for _, tc := range []struct {
		uid, gid int
		user     string
		idmap    bool
	}{
		{1000, 1000, "1000:1000", false},
		{4242, 7, "4242:7", false},
		{0, 0, fmt.Sprintf("%d:%d", MappedUID, MappedUID), true},
		{0, 5, fmt.Sprintf("%d:%d", MappedUID, MappedUID+5), true},
	} {
		if err := os.Chown(ws, tc.uid, tc.gid); err != nil {
			t.Fatal(err)
		}
		id, err := worldIdentity(&sandbox.Spec{Workspace: ws})
		if err != nil || id.user != tc.user || id.idmap != tc.idmap {
			t.Errorf("workspace of %d:%d: identity %+v, %v; want %s (idmap %v)", tc.uid, tc.gid, id, err, tc.user, tc.idmap)
		}
	}
	id, err := worldIdentity(&sandbox.Spec{Workspace: ws, User: &specs.User{UID: 5, GID: 6, AdditionalGids: []uint32{7}}})
	if err != nil || id.user != "5:6" || !slices.Equal(id.groups, []string{"7"}) || id.idmap {
		t.Errorf("Spec.User 5:6+7: identity %+v, %v", id, err)
	}
	// Id 0 is the host's root: refused, whoever asks.
	for _, u := range []specs.User{{UID: 0, GID: 5}, {UID: 5, GID: 0}, {UID: 5, GID: 5, AdditionalGids: []uint32{0}}} {
		if id, err := worldIdentity(&sandbox.Spec{Workspace: ws, User: &u}); err == nil || !strings.Contains(err.Error(), "host's root") {
			t.Errorf("Spec.User %+v: identity %+v, %v; want a refusal", u, id, err)
		}
	}
}

// Reap detaches the idmapped mounts a crashed dsh left and removes their
// mount points, never what is below them: the source keeps its files.
// A recent one (a world being opened) and a live world's stay.
func TestReapMappedDetachesOnly(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	src, dir := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "precious"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour).Unix()
	points := map[string]string{
		"crashed": fmt.Sprintf("%sdead-%d-1", mappedPrefix, old),
		"recent":  fmt.Sprintf("%sdead-%d-2", mappedPrefix, time.Now().Unix()),
		"live":    fmt.Sprintf("%slive-%d-3", mappedPrefix, old),
	}
	for _, name := range points {
		p := filepath.Join(dir, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount(src, p, "", unix.MS_BIND, ""); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Unmount(p, unix.MNT_DETACH) })
	}
	if err := reapMapped(dir, map[string]bool{"live": true}, time.Now().Add(-10*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(src, "precious")); err != nil {
		t.Fatalf("the source lost its file: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, points["crashed"])); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the crashed world's mount point is still there: %v", err)
	}
	for _, k := range []string{"recent", "live"} {
		if _, err := os.Stat(filepath.Join(dir, points[k], "precious")); err != nil {
			t.Errorf("the %s mount was detached: %v", k, err)
		}
	}
}
