package native

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// A world's init is born in the world's cgroup on cgroup v1 too. Writing
// a process's pid to cgroup.procs (or any pid to tasks) takes the
// kernel's cgroup_threadgroup_rwsem for writing, which waits for an RCU
// grace period: 5-15 ms on a small VM, longer than a world's whole start.
// Writing 0 to tasks moves the calling thread alone, which the kernel
// does without that lock. So the spawner thread moves itself into the
// world's group, forks the init there (a child starts in its parent
// thread's groups) and moves itself back. Where it could not move back,
// it does not go: it first moves itself to where it already is, which
// fails as moving back would.

// threadGroupsV1 are the directories of the calling thread's own group,
// one per hierarchy of v1Controllers, in the order of cgroupV1.dirs.
func threadGroupsV1() ([]string, error) {
	f, err := os.Open("/proc/thread-self/cgroup")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	paths := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-ID:controller-list:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			paths[c] = parts[2]
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	var dirs []string
	for i := len(v1Controllers) - 1; i >= 0; i-- {
		c := v1Controllers[i]
		p, ok := paths[c]
		if !ok {
			return nil, errors.New("this thread is in no cgroup v1 " + c + " group")
		}
		dirs = append(dirs, filepath.Join(cgroupRoot, c, p))
	}
	return dirs, nil
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

// v1Groups are the directories of a cgroup v1 world's group, nil on v2.
func v1Groups(cg worldCgroup) []string {
	if g, ok := cg.(*cgroupV1); ok {
		return g.dirs
	}
	return nil
}
