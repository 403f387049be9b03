package native

import "github.com/dsh-dev/dsh/sandbox/native/nsinit"

// InitArg is the hidden first argument that makes dsh run as the native
// sandbox's init. cmd/dsh dispatches it to InitMain before parsing flags;
// tests dispatch it from TestMain.
const InitArg = nsinit.Arg

// InitMain runs the init (package nsinit) and returns the process exit
// status.
func InitMain() int { return nsinit.Main() }
