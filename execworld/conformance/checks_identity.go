package conformance

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/dsh-dev/dsh/sandbox"
)

// Device nodes and masks are the host's inodes seen through a mount: a
// world may use them (writes to /dev/null are swallowed) but never change
// their metadata. The probe re-applies each inode's own mode, owner and
// times, so an unconfined run changes nothing on the host, yet a kernel
// that lets the call through is caught.
func checkDeviceNodesReadOnly(ctx context.Context, s *suite) error {
	// In the workspace, where every driver applies masks.
	var masked string
	var werr error
	w, err := s.open(ctx, func(spec *sandbox.Spec) {
		masked = filepath.Join(spec.Workspace, "masked-file")
		werr = os.WriteFile(masked, []byte(s.secretToken+"\n"), 0o644)
		spec.Masks = append(spec.Masks, masked)
	})
	if err != nil {
		return err
	}
	defer w.w.Close()
	if werr != nil {
		return werr
	}
	host := []string{"/dev/null", "/dev/zero", masked}
	before := make([]syscall.Stat_t, len(host))
	for i, p := range host {
		if err := syscall.Stat(p, &before[i]); err != nil {
			return err
		}
	}
	out, err := w.probeRun(ctx, "meta", "/dev/null", "/dev/zero", masked)
	if err != nil {
		return err
	}
	s.logf("probe said:\n%s", strings.Join(out, "\n"))
	problems := withPrefix(out, "allowed")
	if len(withPrefix(out, "devnull-write-ok")) != 1 {
		problems = append(problems, "a write to /dev/null failed (its data semantics must stay)")
	}
	for i, p := range host {
		var after syscall.Stat_t
		if err := syscall.Stat(p, &after); err != nil {
			return err
		}
		if after.Mode != before[i].Mode || after.Mtim != before[i].Mtim || after.Uid != before[i].Uid {
			problems = append(problems, fmt.Sprintf("the host's %s changed: mode %o→%o, mtime %v→%v", p, before[i].Mode, after.Mode, before[i].Mtim, after.Mtim))
		}
	}
	if len(problems) > 0 || len(withPrefix(out, "done")) != 1 {
		return fmt.Errorf("device node and mask metadata is changeable from inside:\n%s\nprobe said:\n%s", strings.Join(problems, "\n"), strings.Join(out, "\n"))
	}
	return nil
}

// Files only host root may read stay unreadable, wherever they are and
// whatever the mask list says: a world never holds the host's uid 0.
// Without root the suite cannot make such files, and says so.
func checkRootOnlyFiles(ctx context.Context, s *suite) error {
	if os.Geteuid() != 0 {
		s.logf("the suite does not run as root: it cannot make root-owned files, nothing to try")
		return nil
	}
	sys, err := os.MkdirTemp("/var/lib", "dsh-conformance-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(sys)
	if err := os.Chmod(sys, 0o755); err != nil {
		return err
	}
	var paths []string
	for _, dir := range []string{s.base, sys} {
		key := filepath.Join(dir, "root-only.key")
		private := filepath.Join(dir, "root-only.d")
		if err := os.WriteFile(key, []byte(s.secretToken+"\n"), 0o600); err != nil {
			return err
		}
		if err := os.Mkdir(private, 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(private, "key"), []byte(s.secretToken+"\n"), 0o600); err != nil {
			return err
		}
		for _, p := range []string{key, private} {
			if err := os.Chown(p, 0, 0); err != nil {
				return err
			}
		}
		paths = append(paths, key, private)
	}
	w, err := s.mainWorld(ctx)
	if err != nil {
		return err
	}
	out, err := w.probeRun(ctx, append([]string{"secrets"}, paths...)...)
	if err != nil {
		return err
	}
	if readable := withPrefix(out, "readable"); len(readable) > 0 {
		return fmt.Errorf("root-only host files are readable inside:\n%s", strings.Join(readable, "\n"))
	}
	if len(withPrefix(out, "done")) != 1 {
		return fmt.Errorf("probe did not finish: %q", out)
	}
	return nil
}

// homeCredentials are places outside the default mask list where tools
// keep tokens; the home is hidden by an allow-list, so none may be read.
var homeCredentials = []string{
	".config/gh/hosts.yml", ".claude/.credentials.json", ".codex/auth.json",
	".cargo/credentials.toml", ".vault-token", ".pgpass",
	".local/share/keyrings/login.keyring", ".bash_history",
}

// The home is hidden except an explicit list of toolchain locations. A
// driver that shows host files at all (a marker beside the home is
// readable) must show an allowed one (~/go/bin); one that shows none
// passes that part by construction.
func checkHomeCredentials(ctx context.Context, s *suite) error {
	var paths []string
	for _, c := range homeCredentials {
		p := filepath.Join(s.fakeHome, c)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		// World-readable: only hiding the home can protect it.
		if err := os.WriteFile(p, []byte(s.secretToken+"\n"), 0o644); err != nil {
			return err
		}
		paths = append(paths, p)
	}
	tool := filepath.Join(s.fakeHome, "go", "bin", "tool")
	if err := os.MkdirAll(filepath.Dir(tool), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(tool, []byte("DSH-TOOL\n"), 0o755); err != nil {
		return err
	}
	marker := filepath.Join(s.base, "host-view-marker")
	if err := os.WriteFile(marker, []byte("DSH-HOST-VIEW\n"), 0o644); err != nil {
		return err
	}
	w, err := s.open(ctx, nil)
	if err != nil {
		return err
	}
	defer w.w.Close()
	out, err := w.probeRun(ctx, append([]string{"secrets", marker, tool}, paths...)...)
	if err != nil {
		return err
	}
	var problems []string
	for _, l := range withPrefix(out, "readable") {
		if strings.Contains(l, s.secretToken) {
			problems = append(problems, l)
		}
	}
	hostView := len(withPrefix(out, "readable "+marker)) > 0
	if hostView && len(withPrefix(out, "readable "+tool)) == 0 {
		problems = append(problems, "the allowed toolchain file "+tool+" is not readable, though the host's files are shown")
	}
	if len(problems) > 0 || len(withPrefix(out, "done")) != 1 {
		return fmt.Errorf("home credentials outside the mask list:\n%s\nprobe said:\n%s", strings.Join(problems, "\n"), strings.Join(out, "\n"))
	}
	return nil
}
