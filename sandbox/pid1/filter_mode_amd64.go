package pid1

import "golang.org/x/sys/unix"

// legacyModeCalls are amd64's calls that set a mode beside the *at
// family.
var legacyModeCalls = []modeCall{
	{unix.SYS_CHMOD, 1, -1},
	{unix.SYS_OPEN, 2, 1},
	{unix.SYS_CREAT, 1, -1},
	{unix.SYS_MKNOD, 1, -1},
}
