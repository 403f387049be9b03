package native

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/sandbox"
)

// The world's ID as the caller minted it (execworld: dsh run --json, the
// audit line) names its cgroup, after the owner
// prefix that lets a later dsh reap a crashed owner's leftovers.
func TestCgroupNamedAfterTheWorldID(t *testing.T) {
	testenv.RequireUserNS(t)
	testenv.RequireCgroups(t)
	id := sandbox.NewWorldID()
	in := openWorldWith(t, sandbox.DefaultSpec(t.TempDir()), &sandbox.OpenOptions{ID: id})
	me, err := self()
	if err != nil {
		t.Fatal(err)
	}
	want := me.String() + "-" + id
	if in.l.id != want {
		t.Errorf("the world's name %s, want %s", in.l.id, want)
	}
	if o, ok := parseWorldID(in.l.id); !ok || o != me {
		t.Errorf("the world's name %s does not name its owner %v for reaping", in.l.id, me)
	}
	cg, err := os.ReadFile("/proc/" + strconv.Itoa(in.l.cmd.Process.Pid) + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cg), "/"+want+"\n") {
		t.Errorf("the init's cgroups do not end in %s:\n%s", want, cg)
	}
}

func TestBadWorldIDRefused(t *testing.T) {
	for _, id := range []string{"../x", "A", "a-b", strings.Repeat("a", sandbox.MaxWorldIDLen+1)} {
		_, err := New(&Options{StateDir: t.TempDir()}).Open(t.Context(), sandbox.DefaultSpec(t.TempDir()), &sandbox.OpenOptions{ID: id})
		if err == nil || !strings.Contains(err.Error(), "OpenOptions.ID") {
			t.Errorf("ID %q: Open = %v, want an error naming OpenOptions.ID", id, err)
		}
	}
}
