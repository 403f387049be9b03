package nsinit

import (
	"slices"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// setIdentity makes no call for an id the thread already holds (each would
// be an all-threads round in the init) and exactly the call that changes
// one it does not.
func TestSetIdentityCallsOnlyForIDsNotHeld(t *testing.T) {
	ruid, euid, suid := unix.Getresuid()
	rgid, egid, sgid := unix.Getresgid()
	if ruid != euid || euid != suid || rgid != egid || egid != sgid {
		t.Skip("the test process's real, effective and saved ids differ")
	}
	have, err := unix.Getgroups()
	if err != nil {
		t.Fatal(err)
	}
	groups := make([]uint32, len(have))
	for i, g := range have {
		groups[i] = uint32(g)
	}
	uid, gid := uint32(euid), uint32(egid)
	var calls []uintptr
	record := func(trap, a1, a2, a3 uintptr) (uintptr, uintptr, syscall.Errno) {
		calls = append(calls, trap)
		return 0, 0, 0
	}
	for _, c := range []struct {
		name       string
		uid, gid   uint32
		groups     []uint32
		want       []uintptr
		needGroups bool
	}{
		{"every id held", uid, gid, groups, nil, false},
		{"another uid", uid + 1, gid, groups, []uintptr{unix.SYS_SETRESUID}, false},
		{"another gid", uid, gid + 1, groups, []uintptr{unix.SYS_SETRESGID}, false},
		{"other groups", uid, gid, append(slices.Clone(groups), 1<<30), []uintptr{unix.SYS_SETGROUPS}, true},
	} {
		if c.needGroups && !setgroupsAllowed() {
			continue
		}
		calls = nil
		if err := setIdentity(record, c.uid, c.gid, c.groups); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !slices.Equal(calls, c.want) {
			t.Errorf("%s: setIdentity made calls %v, want %v", c.name, calls, c.want)
		}
	}
}
