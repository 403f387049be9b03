package native

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dsh-dev/dsh/sandbox/native/nsinit"
)

// Home directories are hidden by an allow-list, not a deny-list: each
// home (the effective $HOME, the caller's passwd home and, under sudo,
// the sudo user's) is covered by an empty read-only tmpfs, and only the
// Spec's HomeAllow locations that exist are bound back, read-only. A
// workspace inside a home stays reachable (masks above the workspace).

// homeLayout returns the homes to mask and the real host paths of the
// allowed directories to bind back. An allowed entry is skipped when it does
// not exist, when it resolves outside its home (it is then visible, or
// masked, where it really is) or when it lies inside the workspace
// (visible read-write already); and a mask wins over it: entries inside
// one of masks (real paths from Spec.Masks, such as /root) stay hidden.
// A home that is one of masks is not masked twice.
func homeLayout(allow []string, ws string, masks []string) (homes, binds []string) {
	seen := map[string]bool{}
	for _, h := range homeDirs() {
		home, err := filepath.EvalSymlinks(h)
		if err != nil || home == "/" || seen[home] {
			continue
		}
		seen[home] = true
		if ws != "" && nsinit.IsBelow(home, ws) {
			continue // the home is (inside) the workspace: the world's anyway
		}
		if !slices.Contains(masks, home) {
			homes = append(homes, home)
		}
		for _, a := range allow {
			rel, ok := strings.CutPrefix(a, "~/")
			if !ok {
				continue
			}
			real, err := filepath.EvalSymlinks(filepath.Join(home, rel))
			if err != nil || real == home || !nsinit.IsBelow(real, home) || (ws != "" && nsinit.IsBelow(real, ws)) || seen[real] || belowAny(real, masks) {
				continue
			}
			if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
				continue // toolchain locations are directories
			}
			seen[real] = true
			binds = append(binds, real)
		}
	}
	return homes, binds
}

// HomeView reports, for `dsh doctor`, what a world of this caller sees
// of the host's homes: the homes (all hidden) and the locations in them
// bound back read-only, for a Spec with masks and allow (Spec.Masks,
// Spec.HomeAllow) and a workspace outside the homes.
func HomeView(masks, allow []string) (homes, readable []string) {
	for _, h := range homeDirs() {
		if real, err := filepath.EvalSymlinks(h); err == nil && !slices.Contains(homes, real) {
			homes = append(homes, real)
		}
	}
	_, readable = homeLayout(allow, "", expandMasks(masks, os.Geteuid() == 0))
	return homes, readable
}

// belowAny reports whether p is one of dirs or inside one.
func belowAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if nsinit.IsBelow(p, d) {
			return true
		}
	}
	return false
}
