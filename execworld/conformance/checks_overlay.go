package conformance

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/sandbox"
	"github.com/dsh-dev/dsh/workspace/changes"
)

// overlaySeed is the workspace every workspace-mode check starts from.
var overlaySeed = map[string]string{
	"keep.txt":     "kept as it is\n",
	"edit.txt":     "as the host wrote it\n",
	"gone.txt":     "deleted by the world\n",
	"olddir/a":     "a\n",
	"olddir/sub/b": "b\n",
}

// openMode opens a world whose workspace, seeded with overlaySeed, is
// in mode; mutate may change the Spec further.
func (s *suite) openMode(ctx context.Context, mode sandbox.WorkspaceMode, mutate func(*sandbox.Spec)) (*world, error) {
	var seedErr error
	w, err := s.open(ctx, func(sp *sandbox.Spec) {
		sp.WorkspaceMode = mode
		for p, data := range overlaySeed {
			full := filepath.Join(sp.Workspace, p)
			if err := os.MkdirAll(filepath.Dir(full), 0o777); err != nil {
				seedErr = err
			}
			if err := os.WriteFile(full, []byte(data), 0o666); err != nil {
				seedErr = err
			}
			// The world's user may be anyone: everything is writable to
			// it, so that only the mode can refuse a write.
			os.Chmod(full, 0o666)
			os.Chmod(filepath.Dir(full), 0o777)
		}
		if mutate != nil {
			mutate(sp)
		}
	})
	if err != nil {
		return nil, err
	}
	if seedErr != nil {
		w.w.Close()
		return nil, fmt.Errorf("seeding the workspace: %w", seedErr)
	}
	return w, nil
}

// snapshotTree lists every entry of a workspace with its type, mode and
// content: equal snapshots mean nothing changed.
func snapshotTree(root string) (string, error) {
	var b strings.Builder
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %v %d", rel, fi.Mode(), fi.Size())
		if fi.Mode().IsRegular() && rel != ".dsh-probe" {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " %q", data)
		}
		b.WriteString("\n")
		return nil
	})
	return b.String(), err
}

// In read-only mode every kind of write to the workspace fails with
// EROFS, decided by the kernel, and the workspace is unchanged.
func checkWorkspaceReadOnly(ctx context.Context, s *suite) error {
	w, err := s.openMode(ctx, sandbox.WorkspaceRO, nil)
	if err != nil {
		return err
	}
	defer w.w.Close()
	before, err := snapshotTree(w.ws)
	if err != nil {
		return err
	}
	out, err := w.probeRun(ctx, "wswrite", w.ws)
	if err != nil {
		return err
	}
	s.logf("writes in a read-only workspace: %s", strings.Join(out, "; "))
	var problems []string
	if len(out) != 7 {
		problems = append(problems, fmt.Sprintf("the probe reported %d writes, want 7: %v", len(out), out))
	}
	for _, l := range out {
		if !strings.HasSuffix(l, " EROFS") {
			problems = append(problems, l+" (want EROFS)")
		}
	}
	after, err := snapshotTree(w.ws)
	if err != nil {
		return err
	}
	if after != before {
		problems = append(problems, fmt.Sprintf("the workspace changed:\nbefore:\n%safter:\n%s", before, after))
	}
	if len(problems) > 0 {
		return fmt.Errorf("read-only workspace: %s", strings.Join(problems, "; "))
	}
	return nil
}

// In overlay mode the world's writes (add, modify, delete, a directory
// renamed) leave the real workspace untouched, the change set is exactly
// those writes, and applying it makes the workspace what the world saw.
func checkWorkspaceOverlay(ctx context.Context, s *suite) error {
	w, err := s.openMode(ctx, sandbox.WorkspaceOverlay, nil)
	if err != nil {
		return err
	}
	defer w.w.Close()
	before, err := snapshotTree(w.ws)
	if err != nil {
		return err
	}
	out, err := w.probeRun(ctx, "wsedit", w.ws)
	if err != nil {
		return err
	}
	if want := []string{"add ok", "modify ok", "delete ok", "rename ok"}; !slices.Equal(out, want) {
		return fmt.Errorf("edits in an overlay workspace: %v, want %v", out, want)
	}
	res, err := w.run(ctx, &execworld.Cmd{Argv: []string{w.probe, "fill", "0", "one:" + filepath.Join(w.ws, "newdir", "sub", "b")}})
	if err != nil || res.ExitCode() != 0 {
		return fmt.Errorf("a second command in the overlay world: %v %s", err, res.Stderr.Data)
	}
	var problems []string
	if after, err := snapshotTree(w.ws); err != nil {
		return err
	} else if after != before {
		problems = append(problems, fmt.Sprintf("the real workspace changed before apply:\nbefore:\n%safter:\n%s", before, after))
	}
	set, err := w.w.Changes()
	if err != nil {
		return fmt.Errorf("the change set: %w", err)
	}
	got := changeLines(set)
	want := []string{
		"added file add.txt 6",
		"modified file edit.txt 20",
		"deleted file gone.txt 21",
		"added dir newdir 0",
		"added file newdir/a 2",
		"added dir newdir/sub 0",
		"added file newdir/sub/b 0",
		"deleted dir olddir 0",
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		problems = append(problems, fmt.Sprintf("change set:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  ")))
	}
	if after, err := snapshotTree(w.ws); err != nil {
		return err
	} else if after != before {
		problems = append(problems, "the real workspace changed when the change set was taken")
	}
	if len(problems) > 0 {
		return fmt.Errorf("overlay workspace: %s", strings.Join(problems, "; "))
	}
	if _, err := set.Apply(w.ws, nil); err != nil {
		return fmt.Errorf("applying the change set: %w", err)
	}
	for p, want := range map[string]string{
		"add.txt": "added\n", "edit.txt": "edited by the world\n", "keep.txt": overlaySeed["keep.txt"],
		"newdir/a": "a\n", "newdir/sub/b": "",
	} {
		if b, err := os.ReadFile(filepath.Join(w.ws, p)); err != nil || string(b) != want {
			problems = append(problems, fmt.Sprintf("after apply %s = %q (%v), want %q", p, b, err, want))
		}
	}
	for _, p := range []string{"gone.txt", "olddir"} {
		if _, err := os.Lstat(filepath.Join(w.ws, p)); !os.IsNotExist(err) {
			problems = append(problems, fmt.Sprintf("after apply %s exists (%v)", p, err))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("overlay workspace: %s", strings.Join(problems, "; "))
	}
	s.logf("change set: %s; applied", strings.Join(got, ", "))
	return nil
}

// changeLines renders a change set as sorted "kind type path size" lines.
func changeLines(set *changes.Set) []string {
	var out []string
	for _, c := range set.Changes {
		out = append(out, fmt.Sprintf("%s %s %s %d", c.Kind, c.Type, c.Path, c.Size))
	}
	slices.Sort(out)
	return out
}

// overlayBound is the upper layer's bound in the bounded-overlay check.
const overlayBound = 8 << 20

// An overlay world cannot write more than its upper layer's bound: the
// write past it fails with ENOSPC (or EDQUOT), the world goes on, and
// the real workspace gets nothing.
func checkWorkspaceOverlayBounded(ctx context.Context, s *suite) error {
	w, err := s.openMode(ctx, sandbox.WorkspaceOverlay, func(sp *sandbox.Spec) { sp.OverlaySize = overlayBound })
	if err != nil {
		return err
	}
	defer w.w.Close()
	big := filepath.Join(w.ws, "big")
	out, err := w.probeRun(ctx, "fill", fmt.Sprint(8*overlayBound), "one:"+big)
	if err != nil {
		return err
	}
	s.logf("writing %d MiB in an overlay bounded to %d MiB: %v", 8*overlayBound>>20, overlayBound>>20, out)
	var errno string
	var n int64
	if len(out) != 1 {
		return fmt.Errorf("fill: %v", out)
	}
	var path string
	if _, err := fmt.Sscanf(out[0], "fill %s %d %s", &path, &n, &errno); err != nil {
		return fmt.Errorf("fill: %v", out)
	}
	if errno != "ENOSPC" && errno != "EDQUOT" {
		return fmt.Errorf("writing %d MiB into an overlay workspace bounded to %d MiB: %s after %d bytes, want ENOSPC or EDQUOT", 8*overlayBound>>20, overlayBound>>20, errno, n)
	}
	if n > overlayBound {
		return fmt.Errorf("the world wrote %d bytes into an overlay workspace bounded to %d", n, overlayBound)
	}
	after := filepath.Join(w.ws, "after")
	if out, err := w.probeRun(ctx, "fill", "0", "one:"+after); err != nil || len(out) != 1 || out[0] != "fill "+after+" 0 none" {
		return fmt.Errorf("the world after ENOSPC: %v %v, want it to go on", out, err)
	}
	if _, err := os.Lstat(big); !os.IsNotExist(err) {
		return fmt.Errorf("the real workspace got %s (%v)", big, err)
	}
	return nil
}
