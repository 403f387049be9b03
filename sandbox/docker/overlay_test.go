package docker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/sandbox"
)

// mounted reports whether a mount point below dir is in this mount
// namespace.
func mounted(t *testing.T, dir string) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(b), " "+dir)
}

// TestOverlayLeavesNothing: Close of an overlay world removes its
// overlay mount and directory.
func TestOverlayLeavesNothing(t *testing.T) {
	testenv.RequireRoot(t)
	cli := newClient(t)
	requireImage(t, cli, baseImage)
	d, err := New(&Options{InitPath: initBinary(t), Client: cli})
	if err != nil {
		t.Fatal(err)
	}
	spec := sandbox.DefaultSpec(workspace(t))
	spec.WorkspaceMode = "overlay"
	inst, err := d.Open(deadline(t), spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := inst.(*world)
	if w.overlayDir == "" || !mounted(t, w.merged) {
		t.Fatalf("an overlay world has no overlay mount (dir %q)", w.overlayDir)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if mounted(t, w.overlayDir) {
		t.Errorf("after Close, a mount below %s remains", w.overlayDir)
	}
	if _, err := os.Stat(w.overlayDir); !os.IsNotExist(err) {
		t.Errorf("after Close, %s remains (%v)", w.overlayDir, err)
	}
}

// TestReapUnmountsLeftOverlays: the overlay of a crashed dsh's world is
// unmounted before its directory is removed.
func TestReapUnmountsLeftOverlays(t *testing.T) {
	testenv.RequireRoot(t)
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "dsh-world-deadbeef00-overlay-1")
	merged := filepath.Join(dir, overlayMerged)
	if err := os.MkdirAll(merged, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", merged, "tmpfs", 0, "size=64k"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(merged, unix.MNT_DETACH) })
	if err := os.WriteFile(filepath.Join(merged, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	os.Chtimes(dir, old, old)
	if err := reapHostFiles(tmp, map[string]bool{}, time.Now().Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if mounted(t, merged) {
		t.Errorf("after Reap, the overlay mount %s remains", merged)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("after Reap, %s remains (%v)", dir, err)
	}
}

// TestWorkspaceMountFollowsTheMode: the workspace bind is read-only in
// ro mode and comes from the overlay's mount point in overlay mode.
func TestWorkspaceMountFollowsTheMode(t *testing.T) {
	for _, tc := range []struct {
		mode     sandbox.WorkspaceMode
		src      string
		wantSrc  string
		readOnly bool
	}{
		{sandbox.WorkspaceRW, "", "/srv/app", false},
		{sandbox.WorkspaceRO, "", "/srv/app", true},
		{sandbox.WorkspaceOverlay, "/tmp/dsh-world-x-overlay-1/merged", "/tmp/dsh-world-x-overlay-1/merged", false},
	} {
		spec := sandbox.DefaultSpec("/srv/app")
		spec.WorkspaceMode = tc.mode
		_, host, err := containerConfig(spec, &containerPlan{Image: spec.Image, InitPath: "/d", WorkspaceSource: tc.src})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, m := range host.Mounts {
			if m.Target == "/srv/app" {
				found = true
				if m.Source != tc.wantSrc || m.ReadOnly != tc.readOnly {
					t.Errorf("mode %s: workspace mount %s ro=%v, want %s ro=%v", tc.mode, m.Source, m.ReadOnly, tc.wantSrc, tc.readOnly)
				}
			}
		}
		if !found {
			t.Errorf("mode %s: no workspace mount in %v", tc.mode, host.Mounts)
		}
	}
}
