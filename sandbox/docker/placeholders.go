package docker

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/dsh-dev/dsh/sandbox"
)

// The journals of the placeholders a world makes in its workspace
// (sandbox.PrepareProtected) live in dsh's own directory, which no world
// is given: root's is MappedDir, or where /run cannot be written (a
// read-only container, as in deploy/compose) a private directory in the
// temporary directory, as another user's always is. Each is named after
// its owner, as the containers' labels name it, so the next start
// removes those of a dsh that died without closing its worlds
// (reapPlaceholders).

// journalDir returns the directory of this user's journals, made if
// missing; it refuses one that another user could write or own.
func journalDir() (string, error) {
	uid := os.Getuid()
	dir := filepath.Join(os.TempDir(), "dsh-docker-"+strconv.Itoa(uid))
	if uid == 0 && os.MkdirAll(MappedDir, 0o700) == nil {
		dir = MappedDir
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("docker: making %s for the journals of workspace placeholders: %w (set TMPDIR to a directory dsh may write)", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("docker: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != uid || fi.Mode().Perm()&0o022 != 0 {
		return "", fmt.Errorf("docker: %s must be a directory of uid %d that no one else may write (mode %04o); remove it (as its owner or root) and retry", dir, uid, fi.Mode().Perm())
	}
	return dir, nil
}

// journalName names a world's journal after its owner and the world.
func (o owner) journalName(worldID string) string {
	return strconv.Itoa(o.pid) + "-" + o.start + "-" + worldID + sandbox.JournalSuffix
}

// reapPlaceholders removes the placeholders that worlds of dead dsh
// processes on this host left in their workspaces, by their journals in
// dir (sandbox.ReapJournals).
func reapPlaceholders(dir, host string) error {
	_, err := sandbox.ReapJournals(dir, func(name string) bool {
		f := strings.SplitN(name, "-", 3)
		return len(f) == 3 && ownerGone(map[string]string{sandbox.LabelOwnerHost: host, sandbox.LabelOwnerPID: f[0], sandbox.LabelOwnerStart: f[1]}, host)
	})
	if err != nil {
		return fmt.Errorf("docker: %w", err)
	}
	return nil
}
