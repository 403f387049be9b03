package native

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/dsh-dev/dsh/sandbox"
	"github.com/dsh-dev/dsh/sandbox/native/initspawn"
)

// stateBase returns the caller's private directory, creating it 0700:
// the mount point of every world's root, each in its init's own mount
// namespace. A directory that exists but is not private to the caller is
// an error, not something to trust or to fix silently.
//
// The default is the first of sandbox.StateDirs the caller may use: root's
// /run/dsh-native, the caller's own /run/user/UID, else /tmp. It never
// follows the environment ($XDG_RUNTIME_DIR, $TMPDIR), which could name a
// directory inside some world's workspace: every dsh of a uid refuses
// workspaces and binds that overlap these same directories
// (sandbox.StateOverlap).
func stateBase(override string) (string, error) {
	uid := os.Getuid()
	base := override
	if base != "" {
		if !filepath.IsAbs(base) {
			return "", fmt.Errorf("native: the state directory %q is not an absolute path; give Options.StateDir as one", base)
		}
		base = filepath.Clean(base)
	} else {
		base = initspawn.DefaultStateDir(uid)
	}
	if err := os.MkdirAll(base, 0o700); err != nil {
		return "", fmt.Errorf("native: creating state directory: %w", err)
	}
	fi, err := os.Lstat(base)
	if err != nil {
		return "", fmt.Errorf("native: state directory: %w", err)
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	// 0711 is a root dsh's: its mapped worlds search it (below).
	if !fi.IsDir() || st == nil || int(st.Uid) != uid || fi.Mode().Perm()&0o066 != 0 {
		owner := "no one"
		if st != nil {
			owner = "uid " + strconv.Itoa(int(st.Uid))
		}
		return "", fmt.Errorf("native: state directory %s (owned by %s, mode %04o) must be a directory owned by uid %d with mode 0700 or 0711; remove it (as its owner or root) and retry", base, owner, fi.Mode().Perm(), uid)
	}
	// A root dsh's worlds are mapped: their init mounts their root on
	// this directory, before its release, as an unprivileged host uid.
	if os.Geteuid() == 0 && fi.Mode().Perm() != 0o711 {
		if err := os.Chmod(base, 0o711); err != nil {
			return "", fmt.Errorf("native: state directory: %w", err)
		}
	}
	return base, nil
}

// checkApart refuses a workspace or writable bind source that is, lies
// inside, or contains the state directory base (sandbox.StateWhy).
// sandbox.Validate refuses the default directories already; this holds
// for Options.StateDir too.
func checkApart(base, ws string, mounts []specs.Mount) error {
	real := realOrClean(base)
	overlaps := func(p string) bool {
		p = realOrClean(p)
		return sandbox.IsWithin(p, real) || sandbox.IsWithin(real, p)
	}
	if ws != "" && overlaps(ws) {
		return invalid(&sandbox.SpecError{Field: "Workspace", Msg: fmt.Sprintf("%s is, holds or lies in the native state directory %s: %s", ws, base, sandbox.StateWhy), Fix: "use a project directory outside it"})
	}
	for i, m := range mounts {
		if o, err := sandbox.ParseMountOptions(m.Options); err == nil && sandbox.IsBind(m) && !o.ReadOnly && overlaps(m.Source) {
			return invalid(&sandbox.SpecError{Field: fmt.Sprintf("Mounts[%d]", i), Msg: fmt.Sprintf("the writable bind source %s is, holds or lies in the native state directory %s: %s", m.Source, base, sandbox.StateWhy), Fix: "bind it read-only, or bind a directory that does not overlap it"})
		}
	}
	return nil
}

// realOrClean is p with its symbolic links resolved, else cleaned.
func realOrClean(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// owner identifies a dsh process across pid reuse: its pid and its start
// time in clock ticks since boot (field 22 of /proc/PID/stat).
type owner struct {
	pid   int
	start uint64
}

func (o owner) String() string { return fmt.Sprintf("%d-%d", o.pid, o.start) }

func self() (owner, error) {
	pid := os.Getpid()
	st, err := initspawn.StartTime(pid)
	return owner{pid, st}, err
}

func writableDir(p string) bool { return syscall.Access(p, 2 /* W_OK */) == nil }

// alive reports whether the process that owned a world still runs.
func (o owner) alive() bool {
	st, err := initspawn.StartTime(o.pid)
	return err == nil && st == o.start
}

// stateName returns "<pid>-<start>-<worldID>", the name of a world's
// state directory and cgroup: the world's own ID (the one execworld, the
// audit log and dsh run --json show), prefixed with its owner, so a later
// dsh can tell a crashed owner's leftover from a live world without any
// record beside the name.
func stateName(worldID string) (string, error) {
	o, err := self()
	if err != nil {
		return "", fmt.Errorf("native: reading own start time: %w", err)
	}
	return o.String() + "-" + worldID, nil
}

// parseWorldID returns the owner encoded in a state name.
func parseWorldID(id string) (owner, bool) {
	f := strings.SplitN(id, "-", 3)
	if len(f) != 3 {
		return owner{}, false
	}
	pid, err1 := strconv.Atoi(f[0])
	st, err2 := strconv.ParseUint(f[1], 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 {
		return owner{}, false
	}
	return owner{pid, st}, true
}

// reap removes what crashed dsh processes left behind: cgroups, the
// placeholders their worlds made in their workspaces (reapPlaceholders)
// and state directories of worlds whose owner is gone, in state
// directory base and cgroup parent. Live worlds (this process's or
// another dsh's) are left alone. It reports what it removed, and why it
// could not remove a world's placeholders.
func reap(base, parent string) (removed []string, err error) {
	for _, id := range leftoverCgroups(parent) {
		if o, ok := parseWorldID(id); ok && !o.alive() {
			if cg, err := loadCgroup(parent, id); err == nil {
				_ = cg.destroy()
				removed = append(removed, "cgroup "+id)
			}
		}
	}
	// Their processes are gone with their cgroups: the placeholders next.
	reaped, err := reapPlaceholders(base)
	removed = append(removed, reaped...)
	// Directories of worlds an older dsh made.
	entries, _ := os.ReadDir(base)
	for _, e := range entries {
		if o, ok := parseWorldID(e.Name()); ok && !o.alive() && !strings.HasSuffix(e.Name(), sandbox.JournalSuffix) {
			if os.RemoveAll(filepath.Join(base, e.Name())) == nil {
				removed = append(removed, "state "+e.Name())
			}
		}
	}
	return removed, err
}

// journalPath is where a world records the placeholders it makes in its
// workspace (sandbox.PrepareProtected), named after the world and its
// owner as its state is (stateName).
func journalPath(base, stateName string) string {
	return filepath.Join(base, stateName+sandbox.JournalSuffix)
}

// reapPlaceholders removes the placeholders that worlds of dead dsh
// processes left in their workspaces, by their journals in base
// (sandbox.ReapJournals).
func reapPlaceholders(base string) (removed []string, err error) {
	reaped, err := sandbox.ReapJournals(base, func(name string) bool {
		o, ok := parseWorldID(name)
		return ok && !o.alive()
	})
	for _, name := range reaped {
		removed = append(removed, "placeholders "+name)
	}
	return removed, err
}
