package conformance

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/dsh-dev/dsh/sandbox"
)

// A bind mount's nosuid, nodev and noexec are honoured: the world's
// mountinfo shows them on the mount and an executable there does not run.
// A driver that cannot set them must refuse the Spec, naming them; it
// never drops them.
func checkBindMountOptions(ctx context.Context, s *suite) error {
	src, err := os.MkdirTemp(s.base, "bind-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(src)
	if err := os.Chmod(src, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(src, "exe"), s.probe, 0o755); err != nil {
		return err
	}
	// Bound at its own path: a mount point that exists in every
	// driver's root, outside the workspace (mounted after Spec mounts by
	// some drivers, which would hide a bind inside it).
	dest := src
	w, err := s.open(ctx, func(sp *sandbox.Spec) {
		sp.Mounts = append(sp.Mounts, specs.Mount{Type: "bind", Source: src, Destination: dest, Options: []string{"nosuid", "nodev", "noexec"}})
	})
	if err != nil {
		for _, o := range []string{"nosuid", "nodev", "noexec"} {
			if !strings.Contains(err.Error(), o) {
				return fmt.Errorf("a bind with nosuid, nodev and noexec was refused without naming %s: %w", o, err)
			}
		}
		s.logf("refused, naming the options: %v", err)
		return nil
	}
	defer w.w.Close()
	out, err := w.probeRun(ctx, "mountflags", dest, filepath.Join(dest, "exe"))
	if err != nil {
		return err
	}
	s.logf("bind mount: %s", strings.Join(out, "; "))
	var problems []string
	if opts := withPrefix(out, "options"); len(opts) != 1 {
		problems = append(problems, fmt.Sprintf("no mount at %s: %v", dest, out))
	} else {
		have := strings.Split(strings.TrimPrefix(opts[0], "options "), ",")
		for _, o := range []string{"nosuid", "nodev", "noexec"} {
			if !slices.Contains(have, o) {
				problems = append(problems, fmt.Sprintf("the mount lacks %s (options %s)", o, strings.Join(have, ",")))
			}
		}
	}
	switch refused := withPrefix(out, "exec refused"); {
	case len(withPrefix(out, "file")) > 0:
		problems = append(problems, fmt.Sprintf("the bind does not show the host's file: %v", out))
	case len(refused) != 1 || !strings.Contains(refused[0], "permission denied"):
		problems = append(problems, fmt.Sprintf("a file on the noexec bind was not refused execution: %v", out))
	}
	if len(problems) > 0 {
		return fmt.Errorf("bind mount options dropped: %s", strings.Join(problems, "; "))
	}
	return nil
}
