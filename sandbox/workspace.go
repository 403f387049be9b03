package sandbox

import (
	"fmt"
	"strings"
)

// WorkspaceMode is how a world sees its workspace (Spec.WorkspaceMode).
type WorkspaceMode string

// Workspace modes, as users name them (--workspace-mode,
// sandbox.workspace.mode).
const (
	// WorkspaceRW mounts the workspace read-write: the world's writes are
	// the workspace's. The default; "" means it too.
	WorkspaceRW WorkspaceMode = "rw"
	// WorkspaceRO mounts the workspace read-only: every write fails with
	// EROFS, decided by the kernel's mount flag.
	WorkspaceRO WorkspaceMode = "ro"
	// WorkspaceOverlay gives the world a copy-on-write view: an overlay
	// file system whose lower layer is the real workspace (never written)
	// and whose upper layer is a size-limited tmpfs in dsh's state, one
	// per world. What the world changed is the upper layer: the change
	// set (package workspace/changes), applied to the real workspace only
	// when the user asks.
	WorkspaceOverlay WorkspaceMode = "overlay"
)

// WorkspaceModes are the modes, in the order help texts list them.
var WorkspaceModes = []WorkspaceMode{WorkspaceRW, WorkspaceRO, WorkspaceOverlay}

// DefaultOverlaySize bounds an overlay workspace's upper layer when
// Spec.OverlaySize is 0: 1 GiB, or half the world's memory limit when
// that is lower. The upper layer is a tmpfs, and the pages a world
// writes to it are charged to the world's memory cgroup: a bound above
// the memory limit would never be reached (the writer would be
// OOM-killed first), and at half of it the world keeps room to run.
const DefaultOverlaySize = 1 << 30

// MinOverlaySize is the smallest upper layer: room for the directories
// that copy-up creates.
const MinOverlaySize = 1 << 20

// ParseWorkspaceMode reads a mode as users write it; "" is WorkspaceRW.
func ParseWorkspaceMode(s string) (WorkspaceMode, error) {
	if s == "" {
		return WorkspaceRW, nil
	}
	for _, m := range WorkspaceModes {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("%q is not a workspace mode; use one of: %s", s, strings.Join(workspaceModeNames(), ", "))
}

func workspaceModeNames() []string {
	var names []string
	for _, m := range WorkspaceModes {
		names = append(names, string(m))
	}
	return names
}

// Mode returns the Spec's workspace mode, WorkspaceRW when unset.
func (s *Spec) Mode() WorkspaceMode {
	if s.WorkspaceMode == "" {
		return WorkspaceRW
	}
	return s.WorkspaceMode
}

// UpperSize is the bound of an overlay workspace's upper layer in bytes:
// OverlaySize, or when it is 0 DefaultOverlaySize, at most half the
// memory limit.
func (s *Spec) UpperSize() int64 {
	if s.OverlaySize != 0 {
		return s.OverlaySize
	}
	if mem := memoryLimit(s); mem > 0 {
		return max(min(DefaultOverlaySize, mem/2), MinOverlaySize)
	}
	return DefaultOverlaySize
}

// memoryLimit is the Spec's memory limit, 0 for none.
func memoryLimit(s *Spec) int64 {
	if r := s.Resources; r != nil && r.Memory != nil && r.Memory.Limit != nil {
		return *r.Memory.Limit
	}
	return 0
}

// CheckWorkspaceMode checks Spec.WorkspaceMode and Spec.OverlaySize.
func CheckWorkspaceMode(s *Spec) error {
	if _, err := ParseWorkspaceMode(string(s.WorkspaceMode)); err != nil {
		return &SpecError{Field: "WorkspaceMode", Msg: err.Error(), Fix: "leave it empty for rw"}
	}
	if s.OverlaySize != 0 && s.OverlaySize < MinOverlaySize {
		return &SpecError{Field: "OverlaySize", Msg: fmt.Sprintf("%d bytes is below the minimum of %d MiB (and 0 or less would mean no bound)", s.OverlaySize, MinOverlaySize>>20), Fix: "use a size of at least 1MiB, or 0 for the default of 1GiB"}
	}
	if mem := memoryLimit(s); s.Mode() == WorkspaceOverlay && s.OverlaySize > mem && mem > 0 {
		return &SpecError{Field: "OverlaySize", Msg: fmt.Sprintf("%d bytes is above the memory limit of %d bytes: what a world writes to its overlay is charged to its memory, so the world would be OOM-killed before the bound holds", s.OverlaySize, mem), Fix: "lower the overlay size (--overlay-size) or raise the memory limit (--memory); leave it 0 for half the memory limit, at most 1GiB"}
	}
	return nil
}

// OverlayTmpfsData is the tmpfs data of an overlay workspace's upper
// layer: its size bound, and an inode bound in proportion (one inode per
// 4 KiB page), so that a world cannot exhaust memory with empty files
// either.
func OverlayTmpfsData(size int64) string {
	return fmt.Sprintf("size=%d,nr_inodes=%d,mode=0700", size, max(size/4096, 1024))
}

// Overlay is an Instance opened with WorkspaceOverlay (drivers that
// honour the mode implement it). FreezeUpper kills every process of the
// world, as Close does, so that nothing writes any more, and returns the
// host path of the world's upper layer: a directory dsh reads (the
// change set) and copies from (apply, keep) until Close removes it.
// Start fails after it; every call returns the first call's result.
type Overlay interface {
	FreezeUpper() (upper string, err error)
}
