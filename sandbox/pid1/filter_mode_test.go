package pid1

import (
	"runtime"
	"testing"

	"github.com/dsh-dev/dsh/internal/seccomptest"
	"golang.org/x/sys/unix"
)

// TestWorldFilterModes runs the world filter in the BPF interpreter on
// every call that sets a mode: privilege bits are refused, ordinary
// modes and opens that create nothing pass, openat2 is ENOSYS.
func TestWorldFilterModes(t *testing.T) {
	eperm, allow := retErrno(unix.EPERM), uint32(retAllow)
	const creat = unix.O_CREAT | unix.O_WRONLY | unix.O_TRUNC
	cases := []struct {
		name string
		nr   uint32
		args []uint64
		want uint32
	}{
		{"fchmod 4755", unix.SYS_FCHMOD, []uint64{3, 0o4755}, eperm},
		{"fchmod 2755", unix.SYS_FCHMOD, []uint64{3, 0o2755}, eperm},
		{"fchmod 6755, high bits set", unix.SYS_FCHMOD, []uint64{3, 0xffffffff<<32 | 0o6755}, eperm},
		{"fchmod 1777 (sticky)", unix.SYS_FCHMOD, []uint64{3, 0o1777}, allow},
		{"fchmod 0755", unix.SYS_FCHMOD, []uint64{3, 0o755}, allow},
		{"fchmodat 4755", unix.SYS_FCHMODAT, []uint64{unix.AT_FDCWD & 0xffffffff, 0x1000, 0o4755}, eperm},
		{"fchmodat 0644", unix.SYS_FCHMODAT, []uint64{3, 0x1000, 0o644}, allow},
		{"fchmodat2 2755", unix.SYS_FCHMODAT2, []uint64{3, 0x1000, 0o2755, unix.AT_SYMLINK_NOFOLLOW}, eperm},
		{"fchmodat2 0600", unix.SYS_FCHMODAT2, []uint64{3, 0x1000, 0o600, 0}, allow},
		{"openat O_CREAT 4755", unix.SYS_OPENAT, []uint64{3, 0x1000, creat, 0o4755}, eperm},
		{"openat O_CREAT 2755", unix.SYS_OPENAT, []uint64{3, 0x1000, unix.O_CREAT | unix.O_EXCL, 0o2755}, eperm},
		{"openat O_TMPFILE 4755", unix.SYS_OPENAT, []uint64{3, 0x1000, unix.O_TMPFILE | unix.O_WRONLY, 0o4755}, eperm},
		{"openat O_CREAT 0644", unix.SYS_OPENAT, []uint64{3, 0x1000, creat, 0o644}, allow},
		{"openat without O_CREAT, any mode", unix.SYS_OPENAT, []uint64{3, 0x1000, unix.O_RDONLY, 0o4755}, allow},
		{"openat O_DIRECTORY, any mode", unix.SYS_OPENAT, []uint64{3, 0x1000, unix.O_DIRECTORY, 0o6777}, allow},
		{"mknodat S_IFREG|4755", unix.SYS_MKNODAT, []uint64{3, 0x1000, unix.S_IFREG | 0o4755, 0}, eperm},
		{"mknodat S_IFIFO|2644", unix.SYS_MKNODAT, []uint64{3, 0x1000, unix.S_IFIFO | 0o2644, 0}, eperm},
		{"mknodat S_IFIFO|0644", unix.SYS_MKNODAT, []uint64{3, 0x1000, unix.S_IFIFO | 0o644, 0}, allow},
		{"mkdirat 2755 (the kernel drops the bit)", unix.SYS_MKDIRAT, []uint64{3, 0x1000, 0o2755}, allow},
		{"openat2", unix.SYS_OPENAT2, []uint64{3, 0x1000, 0x2000, 24}, retErrno(unix.ENOSYS)},
	}
	if runtime.GOARCH == "amd64" {
		cases = append(cases, legacyModeCases(eperm, allow)...)
	}
	for _, unixSockets := range []bool{false, true} {
		raw, err := worldFilter(unixSockets)
		if err != nil {
			t.Fatal(err)
		}
		vm := seccomptest.VM(t, raw)
		for _, c := range cases {
			got, err := vm.Run(seccompData(c.nr, c.args...))
			if err != nil || uint32(got) != c.want {
				t.Errorf("%s: filter returns %#x, %v; want %#x", c.name, got, err, c.want)
			}
		}
	}
}
