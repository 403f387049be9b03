package execworld

import "errors"

// ErrInitLost means the driver lost a running command: the world's init
// went away (killed from outside, by the OOM killer, or crashed) or its
// connection failed before it reported how the command ended. The
// command's status is unknown, and the world runs nothing more. It is a
// failure of dsh, never the command's success: the Result reports Lost
// and ExitCode LostCode.
var ErrInitLost = errors.New("execworld: the world's init was lost before it reported the command's exit")

// LostCode is the status of a command whose world lost its init: 125,
// the code for "the runtime failed".
const LostCode = 125
