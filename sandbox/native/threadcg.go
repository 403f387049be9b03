package native

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/containerd/cgroups/v3"
	"golang.org/x/sys/unix"
)

// A world's init is born in the world's cgroup on cgroup v1 too. Writing
// a process's pid to cgroup.procs (or any pid to tasks) takes the
// kernel's cgroup_threadgroup_rwsem for writing, which waits for an RCU
// grace period: 5-15 ms on a small VM, longer than a world's whole start.
// Writing 0 to tasks moves the calling thread alone, which the kernel
// does without that lock. So the spawner thread moves itself into the
// world's group, forks the init there (a child starts in its parent
// thread's groups) and moves itself back. The group has no limits yet
// (they are set once the init runs, before its release: makeCgroup), so
// the child until its execve (on dsh's memory: CLONE_VM, CLONE_VFORK) is
// held to neither the world's memory limit nor its cpu quota. The way back is opened
// before the thread goes (threadHome), and the init's groups are read
// back from /proc before it is taken for born inside (bornIn).

// groupsV1 are the directories of the groups a cgroup file of /proc
// (/proc/PID/cgroup, /proc/thread-self/cgroup) names, one per hierarchy
// of v1Controllers, in the order of cgroupV1.dirs.
func groupsV1(file string) ([]string, error) {
	paths, _, err := cgroups.ParseCgroupFileUnified(file)
	if err != nil {
		return nil, err
	}
	for _, c := range v1Controllers {
		if _, ok := paths[c]; !ok {
			return nil, errors.New(file + " names no cgroup v1 " + c + " group")
		}
	}
	return v1Dirs(func(c string) string { return paths[c] }), nil
}

// threadHome is the way back to the calling thread's own groups: their
// tasks files, open for writing.
type threadHome []int

// openThreadHome opens the tasks files of the calling thread's groups
// and moves the thread to where it is through them, which proves it may
// move back (the move back then allocates no descriptor in a world's
// memory group).
func openThreadHome() (threadHome, error) {
	dirs, err := groupsV1("/proc/thread-self/cgroup")
	if err != nil {
		return nil, err
	}
	var h threadHome
	for _, d := range dirs {
		fd, err := unix.Open(filepath.Join(d, "tasks"), unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			h.close()
			return nil, err
		}
		h = append(h, fd)
	}
	if err := h.moveBack(); err != nil {
		h.close()
		return nil, err
	}
	return h, nil
}

// moveBack moves the calling thread back to its own groups.
func (h threadHome) moveBack() error {
	for _, fd := range h {
		if _, err := unix.Write(fd, []byte("0")); err != nil {
			return err
		}
	}
	return nil
}

func (h threadHome) close() {
	for _, fd := range h {
		unix.Close(fd)
	}
}

// moveThread moves the calling thread into the group dirs (one per
// hierarchy); on an error it is in some of them.
func moveThread(dirs []string) error {
	for _, d := range dirs {
		fd, err := unix.Open(filepath.Join(d, "tasks"), unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		_, err = unix.Write(fd, []byte("0"))
		unix.Close(fd)
		if err != nil {
			return &os.PathError{Op: "write", Path: filepath.Join(d, "tasks"), Err: err}
		}
	}
	return nil
}

// bornIn reports whether process pid is in the groups dirs: read back,
// for something of the host (an administrator, a service manager) may
// have moved all of dsh meanwhile.
func bornIn(pid int, dirs []string) bool {
	got, err := groupsV1("/proc/" + strconv.Itoa(pid) + "/cgroup")
	return err == nil && slices.Equal(got, dirs)
}

// v1Groups are the directories of a cgroup v1 world's group, nil on v2.
func v1Groups(cg worldCgroup) []string {
	if g, ok := cg.(*cgroupV1); ok {
		return g.dirs
	}
	return nil
}
