package docker

import (
	"fmt"
	"os"
	"slices"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

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
}
