package native

var archSyscalls = map[string]uint32{}

// archAbsent: arm64 has no port I/O calls.
var archAbsent = []string{"iopl", "ioperm"}
