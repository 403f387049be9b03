package sandbox

import "errors"

// Freezer is implemented by an Instance whose processes can be frozen
// and thawed as a whole (the cgroup freezer; the engine's pause for
// docker). A frozen world keeps its memory and makes no progress: not its
// processes, not its init. Freeze and Thaw are idempotent; Close thaws
// what it must to kill. Drivers that cannot freeze do not implement it.
type Freezer interface {
	Freeze() error
	Thaw() error
}

// ErrNoFreezer is returned, wrapped with the reason, by Freeze and Thaw
// of an Instance whose driver can freeze worlds but not this one (a
// native world opened without limits has no cgroup to freeze).
var ErrNoFreezer = errors.New("sandbox: this world has no freezer")
