package initspawn

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Subuid entries for dsh win over root's; a range too small for a world
// is passed over.
func TestSubordinate(t *testing.T) {
	f := filepath.Join(t.TempDir(), "subuid")
	os.WriteFile(f, []byte("root:100000:65536\nbad\ndsh:200000:65536\nsmall:300000:10\n"), 0o644)
	if got := Subordinate(f, 7); got != 200000 {
		t.Errorf("Subordinate = %d, want dsh's 200000", got)
	}
	os.WriteFile(f, []byte("root:100000:1000\n"), 0o644)
	if got := Subordinate(f, 7); got != 7 {
		t.Errorf("Subordinate with a too small range = %d, want the default", got)
	}
	for b, want := range map[uint32]bool{0: false, 1: true, DefaultIDBase: true, 1<<32 - IDRangeSize - 1: true, 1<<32 - IDRangeSize: false} {
		if got := UsableIDBase(b); got != want {
			t.Errorf("UsableIDBase(%d) = %v, want %v", b, got, want)
		}
	}
}

func TestIDMapText(t *testing.T) {
	for _, c := range []struct {
		m    []syscall.SysProcIDMap
		want string
	}{
		{[]syscall.SysProcIDMap{{ContainerID: 0, HostID: 1879048192, Size: 65536}}, "0 1879048192 65536\n"},
		{[]syscall.SysProcIDMap{{ContainerID: 1000, HostID: 1000, Size: 1}, {ContainerID: 0, HostID: 5, Size: 2}}, "1000 1000 1\n0 5 2\n"},
	} {
		if got := IDMapText(c.m); got != c.want {
			t.Errorf("IDMapText(%v) = %q, want %q", c.m, got, c.want)
		}
	}
}
