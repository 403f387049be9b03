package conformance

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/sandbox"
)

// A workspace belongs to whoever runs dsh (root in CI) and is private to
// them (mode 0700): a world writes it, and what it creates there belongs
// to the workspace's owner on the host, whatever id the world runs as.
// Every driver agrees on that; only who the world is inside may differ.
func checkWorkspaceOwnerKept(ctx context.Context, s *suite) error {
	uid, gid := os.Getuid(), os.Getgid()
	var werr error
	w, err := s.open(ctx, func(spec *sandbox.Spec) {
		if werr = os.Chown(spec.Workspace, uid, gid); werr == nil {
			werr = os.Chmod(spec.Workspace, 0o700)
		}
	})
	if err != nil {
		return err
	}
	defer w.w.Close()
	if werr != nil {
		return werr
	}
	res, err := w.run(ctx, &execworld.Cmd{Argv: []string{"/bin/sh", "-c",
		`echo new > new-file && mkdir new-dir && echo nested > new-dir/f && echo "id: $(id -u):$(id -g)"`}})
	if err != nil {
		return err
	}
	s.logf("world said: %s%s", res.Stdout.Data, res.Stderr.Data)
	if res.ExitCode() != 0 {
		return fmt.Errorf("a world cannot write its workspace (owned by uid %d gid %d, mode 0700): exit %d: %s",
			uid, gid, res.ExitCode(), strings.TrimSpace(string(res.Stderr.Data)))
	}
	var problems []string
	for _, p := range []string{"new-file", "new-dir", "new-dir/f"} {
		var st syscall.Stat_t
		if err := syscall.Lstat(filepath.Join(w.ws, p), &st); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", p, err))
			continue
		}
		if int(st.Uid) != uid || int(st.Gid) != gid {
			problems = append(problems, fmt.Sprintf("%s is owned by uid %d gid %d on the host", p, st.Uid, st.Gid))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("files a world creates do not belong to the workspace's owner (uid %d gid %d):\n%s", uid, gid, strings.Join(problems, "\n"))
	}
	return nil
}
