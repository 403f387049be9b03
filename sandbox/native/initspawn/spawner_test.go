package initspawn

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// GroupsV1 reads a /proc cgroup file as the kernel writes it on a hybrid
// or legacy host: hierarchies with several controllers, named ones and
// the unified one, in any order; a file without one of V1Controllers is
// refused.
func TestGroupsV1(t *testing.T) {
	f := filepath.Join(t.TempDir(), "cgroup")
	os.WriteFile(f, []byte("12:freezer:/dsh-native/w\n11:pids:/user.slice/p\n5:cpu,cpuacct:/c\n"+
		"3:memory:/m\n1:name=systemd:/init.scope\n0::/init.scope\n"), 0o644)
	got, err := GroupsV1(f)
	want := []string{"/sys/fs/cgroup/freezer/dsh-native/w", "/sys/fs/cgroup/cpu/c", "/sys/fs/cgroup/pids/user.slice/p", "/sys/fs/cgroup/memory/m"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("GroupsV1 = %q, %v; want %q", got, err, want)
	}
	os.WriteFile(f, []byte("0::/init.scope\n"), 0o644)
	if got, err := GroupsV1(f); err == nil {
		t.Errorf("GroupsV1 of a cgroup v2 file = %q, want an error", got)
	}
}

// A world ID minted here is one sandbox would mint: 10 hex digits, fresh
// each time.
func TestMintWorldID(t *testing.T) {
	a, err := mintWorldID()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := mintWorldID()
	if len(a) != 10 || a == b || a != lowerHex(a) {
		t.Errorf("mintWorldID = %q then %q, want two different 10-digit lower-case hex strings", a, b)
	}
}

func lowerHex(s string) string {
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return ""
		}
	}
	return s
}
