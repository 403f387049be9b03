package docker

import (
	"testing"

	"github.com/dsh-dev/dsh/sandbox"
)

// The world's ID as the caller minted it (execworld: dsh run --json, the
// audit line) is the container's dev.dsh.world label and names it.
func TestContainerNamedAndLabelledAfterTheWorldID(t *testing.T) {
	id := sandbox.NewWorldID()
	w := openWorldWith(t, baseImage, nil, &sandbox.OpenOptions{ID: id})
	ins, err := newClient(t).ContainerInspect(deadline(t), w.containerID)
	if err != nil {
		t.Fatal(err)
	}
	if got := ins.Config.Labels[sandbox.LabelWorld]; got != id {
		t.Errorf("label %s = %q, want the world ID %q", sandbox.LabelWorld, got, id)
	}
	if ins.Name != "/dsh-"+id {
		t.Errorf("container name %q, want /dsh-%s", ins.Name, id)
	}
}
