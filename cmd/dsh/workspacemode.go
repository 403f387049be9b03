package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/internal/config"
	"github.com/dsh-dev/dsh/sandbox"
	"github.com/dsh-dev/dsh/workspace/changes"
)

// addWorkspaceModeFlags registers --workspace-mode and --overlay-size,
// which set sandbox.workspace.mode and sandbox.workspace.overlay_size.
func addWorkspaceModeFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	var names []string
	for _, m := range sandbox.WorkspaceModes {
		names = append(names, string(m))
	}
	f.String("workspace-mode", "", "how the world sees the workspace, a `MODE` of: rw (read-write, the default), ro (read-only: every write fails with EROFS) or overlay (copy-on-write: the workspace stays untouched and dsh run reports what changed; --apply copies it in)")
	f.String("overlay-size", "", "most an overlay world can write, a `SIZE` such as 256MiB or 2G, at most --memory (its pages are charged to the world's memory); a write past it fails with ENOSPC (default: half the memory limit, at most 1GiB)")
	bindConfigFlag(cmd, "workspace-mode", "sandbox.workspace.mode")
	bindConfigFlag(cmd, "overlay-size", "sandbox.workspace.overlay_size")
	_ = cmd.RegisterFlagCompletionFunc("workspace-mode", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return names, cobra.ShellCompDirectiveNoFileComp
	})
}

// workspaceModeSpec sets the Spec's workspace mode and overlay bound from
// the configuration (which loadConfig validated).
func workspaceModeSpec(spec *sandbox.Spec, w config.Workspace) error {
	mode, err := sandbox.ParseWorkspaceMode(w.Mode)
	if err != nil {
		return fmt.Errorf("--workspace-mode / sandbox.workspace.mode: %w", err)
	}
	spec.WorkspaceMode = mode
	if mode == sandbox.WorkspaceOverlay && w.OverlaySize != "" {
		n, err := config.ParseSize(w.OverlaySize)
		if err != nil {
			return fmt.Errorf("--overlay-size / sandbox.workspace.overlay_size: %w", err)
		}
		spec.OverlaySize = n
	}
	return nil
}

// addChangeFlags registers dsh run's --apply and --keep.
func addChangeFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.Bool("apply", false, "with --workspace-mode overlay: copy the change set into the real workspace when the command exits 0 (never protected paths such as .git/hooks or dsh.yaml, special files, or setuid/setgid bits)")
	f.String("keep", "", "with --workspace-mode overlay: copy the overlay's upper layer to `DIR` (new or empty) for review, whatever the command's status; the workspace stays untouched")
}

// changeOptions are --apply and --keep.
type changeOptions struct {
	apply bool
	keep  string
}

// changeFlags reads --apply and --keep and checks them against the
// world's workspace mode.
func changeFlags(cmd *cobra.Command, mode sandbox.WorkspaceMode) (changeOptions, error) {
	var o changeOptions
	o.apply, _ = cmd.Flags().GetBool("apply")
	o.keep, _ = cmd.Flags().GetString("keep")
	if mode == sandbox.WorkspaceOverlay {
		if o.apply && o.keep != "" {
			return o, errors.New("--apply copies the changes into the workspace and --keep leaves them in a directory for review; choose one")
		}
		if cmd.Flags().Changed("keep") && o.keep == "" {
			return o, errors.New("--keep needs a directory: --keep DIR")
		}
		return o, nil
	}
	for _, f := range []string{"apply", "keep"} {
		if cmd.Flags().Changed(f) {
			return o, fmt.Errorf("--%s works on the change set of an overlay workspace, but the workspace mode is %s; add --workspace-mode overlay (or set sandbox.workspace.mode: overlay)", f, mode)
		}
	}
	return o, nil
}

// protectedPaths are the workspace paths --apply never writes: the files
// through which a world would reach the user's own tools (git's config
// and hooks, dsh's configuration, direnv, editor tasks).
func protectedPaths(spec *sandbox.Spec) []string { return spec.Protected }

// changeReport is the "changes" object of dsh run --json.
type changeReport struct {
	*changes.Set
	// Applied is what --apply did; nil without --apply or when the
	// command failed.
	Applied *changes.Result `json:"applied"`
	// Kept is the directory of --keep.
	Kept string `json:"kept,omitempty"`
	// NotApplied says why --apply did not apply.
	NotApplied string `json:"not_applied,omitempty"`
}

// finishOverlay ends an overlay world: it computes the change set, and
// applies or keeps it as o says (apply only when the command exited 0).
func finishOverlay(w *execworld.World, o changeOptions, exitCode int) (*changeReport, error) {
	set, err := w.Changes()
	if err != nil {
		return nil, err
	}
	rep := &changeReport{Set: set}
	spec := w.Spec()
	switch {
	case o.keep != "":
		if err := set.Keep(o.keep); err != nil {
			return rep, err
		}
		rep.Kept = o.keep
	case o.apply && exitCode != 0:
		rep.NotApplied = fmt.Sprintf("the command exited %d", exitCode)
	case o.apply:
		res, err := set.Apply(spec.Workspace, protectedPaths(spec))
		rep.Applied = res
		if err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// maxListed bounds the changes listed on stderr; --json has them all.
const maxListed = 100

// print says on stderr what the world changed and what became of it.
func (r *changeReport) print(out io.Writer, ws string) {
	s := r.Set
	if len(s.Changes) == 0 {
		fmt.Fprintln(out, "dsh: overlay: the command changed nothing in the workspace")
		return
	}
	fmt.Fprintf(out, "dsh: overlay: %d added, %d modified, %d deleted (%s written):\n", s.Added, s.Modified, s.Deleted, humanBytes(s.Bytes))
	for i, c := range s.Changes {
		if i == maxListed {
			fmt.Fprintf(out, "  ... and %d more (--json lists every change)\n", len(s.Changes)-maxListed)
			break
		}
		line := fmt.Sprintf("  %s %s", strings.ToUpper(string(c.Kind[0])), c.Path)
		switch {
		case c.Type == changes.TypeDir:
			line += "/"
		case c.Type == changes.TypeSymlink:
			line += " -> " + c.Target
		case c.Kind != changes.Deleted && c.Type == changes.TypeFile:
			line += " (" + humanBytes(c.Size) + ")"
		}
		fmt.Fprintln(out, line)
	}
	switch {
	case r.Kept != "":
		fmt.Fprintf(out, "dsh: overlay: kept the upper layer in %s; %s is untouched\n", r.Kept, ws)
	case r.NotApplied != "":
		fmt.Fprintf(out, "dsh: overlay: not applied: %s; %s is untouched (rerun, or use --keep DIR to review the changes)\n", r.NotApplied, ws)
	case r.Applied != nil:
		fmt.Fprintf(out, "dsh: overlay: applied %d changes to %s\n", len(r.Applied.Applied), ws)
		for _, k := range r.Applied.Skipped {
			fmt.Fprintf(out, "dsh: overlay: not applied: %s (%s)\n", k.Path, k.Why)
		}
		for _, p := range r.Applied.Stripped {
			fmt.Fprintf(out, "dsh: overlay: applied %s without its setuid/setgid bits\n", p)
		}
	default:
		fmt.Fprintf(out, "dsh: overlay: %s is untouched; rerun with --apply to copy the changes in, or --keep DIR to review them\n", ws)
	}
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
