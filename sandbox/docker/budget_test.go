package docker

import (
	"strconv"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/dsh-dev/dsh/sandbox"
)

func tmpfsSize(t *testing.T, opts string) int64 {
	t.Helper()
	for _, o := range strings.Split(opts, ",") {
		if v, ok := strings.CutPrefix(o, "size="); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no size in %q", opts)
	return 0
}

// A root world can write docker's own /dev, which the Engine API cannot
// size: it comes off the budget, so /tmp and /dev/shm get less.
func TestRootWorldsCountDockersDev(t *testing.T) {
	mem := int64(256 << 20)
	spec := sandbox.DefaultSpec(t.TempDir())
	spec.Resources.Memory = &specs.LinuxMemory{Limit: &mem}
	sizes := func(user string) int64 {
		_, host, err := containerConfig(spec, &containerPlan{Image: "i", InitPath: "/d", User: user})
		if err != nil {
			t.Fatal(err)
		}
		return tmpfsSize(t, host.Tmpfs["/tmp"]) + tmpfsSize(t, host.Tmpfs["/dev/shm"])
	}
	user, root := sizes("1000:1000"), sizes("0:0")
	if root >= user || user-root < dockerDevBytes/2 {
		t.Errorf("tmpfs together: %d for a root world, %d for uid 1000; want the root world's smaller by about docker's /dev (%d)", root, user, dockerDevBytes)
	}
}
