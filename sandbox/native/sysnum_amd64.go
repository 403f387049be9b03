package native

import "golang.org/x/sys/unix"

// archSyscalls: port I/O, x86 only.
var archSyscalls = map[string]uint32{"iopl": unix.SYS_IOPL, "ioperm": unix.SYS_IOPERM}

var archAbsent []string
