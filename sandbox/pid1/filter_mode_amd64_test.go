package pid1

import "golang.org/x/sys/unix"

// legacyModeCases are amd64's chmod, open, creat and mknod.
func legacyModeCases(eperm, allow uint32) []struct {
	name string
	nr   uint32
	args []uint64
	want uint32
} {
	return []struct {
		name string
		nr   uint32
		args []uint64
		want uint32
	}{
		{"chmod 4755", unix.SYS_CHMOD, []uint64{0x1000, 0o4755}, eperm},
		{"chmod 0755", unix.SYS_CHMOD, []uint64{0x1000, 0o755}, allow},
		{"open O_CREAT 6755", unix.SYS_OPEN, []uint64{0x1000, unix.O_CREAT | unix.O_WRONLY, 0o6755}, eperm},
		{"open O_TMPFILE 2755", unix.SYS_OPEN, []uint64{0x1000, unix.O_TMPFILE | unix.O_RDWR, 0o2755}, eperm},
		{"open O_RDONLY, any mode", unix.SYS_OPEN, []uint64{0x1000, unix.O_RDONLY, 0o4755}, allow},
		{"open O_CREAT 0600", unix.SYS_OPEN, []uint64{0x1000, unix.O_CREAT, 0o600}, allow},
		{"creat 4755", unix.SYS_CREAT, []uint64{0x1000, 0o4755}, eperm},
		{"creat 0644", unix.SYS_CREAT, []uint64{0x1000, 0o644}, allow},
		{"mknod S_IFREG|2755", unix.SYS_MKNOD, []uint64{0x1000, unix.S_IFREG | 0o2755, 0}, eperm},
		{"mknod S_IFREG|0644", unix.SYS_MKNOD, []uint64{0x1000, unix.S_IFREG | 0o644, 0}, allow},
		{"mkdir 2755 (the kernel drops the bit)", unix.SYS_MKDIR, []uint64{0x1000, 0o2755}, allow},
	}
}
