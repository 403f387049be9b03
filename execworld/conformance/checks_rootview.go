package conformance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/sandbox"
)

// A minimal root (Spec.Root minimal) shows programs and libraries and
// nothing else of the host: a world-readable file the suite leaves
// outside the workspace, and the host's data, homes, services' state and
// identity (machine-id), are absent; programs still run and the
// workspace is writable. A driver whose root is not the host's refuses
// the Spec, naming Root; it never ignores it.
func checkMinimalRoot(ctx context.Context, s *suite) error {
	outside := filepath.Join(s.base, "outside-the-workspace")
	if err := os.WriteFile(outside, []byte(s.secretToken+"\n"), 0o644); err != nil {
		return err
	}
	w, err := s.open(ctx, func(spec *sandbox.Spec) { spec.Root = sandbox.RootMinimal })
	if err != nil {
		if errors.Is(err, sandbox.ErrInvalidSpec) && strings.Contains(err.Error(), "Root") {
			s.logf("refused, naming Root: %v", err)
			return nil
		}
		return err
	}
	defer w.w.Close()
	// What exists on this host and a minimal root must not show.
	var absent []string
	for _, p := range []string{outside, s.base, "/etc/machine-id", "/etc/shadow", "/etc/fstab", "/etc/ld.so.preload",
		"/home", "/root", "/var/lib", "/var/log", "/srv", "/opt", "/run", "/sys", "/boot", "/mnt"} {
		if _, err := os.Lstat(p); err == nil && !strings.HasPrefix(w.ws, p+"/") {
			absent = append(absent, p)
		}
	}
	script := `for p in "$@"; do if test -e "$p" || test -L "$p"; then echo "present $p"; fi; done
echo made > made-in-minimal-root && cat made-in-minimal-root && test -x /bin/sh && echo done`
	res, err := w.run(ctx, &execworld.Cmd{Argv: append([]string{"/bin/sh", "-c", script, "sh"}, absent...)})
	if err != nil {
		return err
	}
	out := lines(res.Stdout.String())
	s.logf("checked %d host paths; world said: %s%s", len(absent), res.Stdout.Data, res.Stderr.Data)
	if present := withPrefix(out, "present"); len(present) > 0 {
		return fmt.Errorf("a minimal root shows the host's files:\n%s", strings.Join(present, "\n"))
	}
	if res.ExitCode() != 0 || len(withPrefix(out, "done")) != 1 || len(withPrefix(out, "made")) != 1 {
		return fmt.Errorf("in a minimal root, programs or the workspace do not work: exit %d: %s%s", res.ExitCode(), res.Stdout.Data, res.Stderr.Data)
	}
	return nil
}
