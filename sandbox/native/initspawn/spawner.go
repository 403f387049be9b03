package initspawn

import (
	"errors"
	"os"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// The init's parent-death signal fires when the OS thread that forked it
// exits, not only when dsh does. Go ends a thread when a goroutine that
// locked it returns, which may happen to any thread later. So every init
// is forked from one thread that is locked for the life of the process
// and never exits: the spawner. It is never the main thread, whose
// groups are the memory cgroup every page of dsh is charged to (it moves
// into a world's groups to fork its init, below).
var spawner struct {
	once sync.Once
	reqs chan spawnReq
}

type spawnReq struct {
	dirs    []string
	start   func() (pid int, err error)
	started func(pid int) error
	abort   func()
	done    chan spawnResult
}

type spawnResult struct {
	bornIn bool
	err    error
}

// Spawn runs start on the spawner thread, inside the cgroup v1 groups
// dirs (one per hierarchy of V1Controllers, in V1Dirs's order) where the
// thread may move; bornIn says the process started there. Otherwise the
// caller places it by its pid. started (nil for none) runs next on the
// same thread (the init's id maps: the init waits for them); if it
// fails, abort kills and reaps the process.
func Spawn(dirs []string, start func() (pid int, err error), started func(pid int) error, abort func()) (bornIn bool, err error) {
	spawner.once.Do(func() {
		spawner.reqs = make(chan spawnReq)
		go serveSpawns(nil)
	})
	done := make(chan spawnResult, 1)
	spawner.reqs <- spawnReq{dirs: dirs, start: start, started: started, abort: abort, done: done}
	r := <-done
	return r.bornIn, r.err
}

// serveSpawns locks its goroutine to a thread other than the main one
// and serves spawns from it; ready, if not nil, is closed once it does.
func serveSpawns(ready chan struct{}) {
	runtime.LockOSThread() // never unlocked: the thread lives as long as dsh
	if syscall.Gettid() == syscall.Getpid() {
		// Held here, the main thread runs nothing else: the next
		// goroutine locks another.
		next := make(chan struct{})
		go serveSpawns(next)
		<-next
		runtime.UnlockOSThread()
		return
	}
	if ready != nil {
		close(ready)
	}
	for r := range spawner.reqs {
		res, pid, stuck := spawnIn(r.dirs, r.start, r.abort)
		if res.err == nil && r.started != nil {
			if err := r.started(pid); err != nil {
				r.abort()
				res = spawnResult{err: err}
			}
		}
		if stuck {
			// Left in a world's groups. Ending the thread would send
			// every init it forked its parent-death signal, so it is
			// parked for dsh's life instead: that world's group stays
			// (destroy never signals dsh itself), and another thread
			// serves the spawns.
			go serveSpawns(nil)
			r.done <- res
			select {}
		}
		r.done <- res
	}
}

// A world's init is born in the world's cgroup on cgroup v1 too. Writing
// a process's pid to cgroup.procs (or any pid to tasks) takes the
// kernel's cgroup_threadgroup_rwsem for writing, which waits for an RCU
// grace period: 5-15 ms on a small VM, longer than a world's whole start.
// Writing 0 to tasks moves the calling thread alone, which the kernel
// does without that lock. So the spawner thread moves itself into the
// world's group, forks the init there (a child starts in its parent
// thread's groups) and moves itself back. The group has no limits yet
// (the driver sets them once the init runs, before its release), so the
// child until its execve (on dsh's memory: CLONE_VM, CLONE_VFORK) is held
// to neither the world's memory limit nor its cpu quota. The way back is
// opened before the thread goes (threadHome), and the init's groups are
// read back from /proc before it is taken for born inside (BornIn).

// spawnIn starts the process inside the v1 groups dirs if this thread
// may move there and back, else where it is. stuck says it could not
// move back.
func spawnIn(dirs []string, start func() (int, error), abort func()) (res spawnResult, pid int, stuck bool) {
	if len(dirs) == 0 {
		pid, err := start()
		return spawnResult{err: err}, pid, false
	}
	home, err := openThreadHome()
	if err != nil {
		pid, err := start()
		return spawnResult{err: err}, pid, false
	}
	defer home.close()
	if moveThread(dirs) != nil {
		if err := home.moveBack(); err != nil {
			return spawnResult{err: stuckError(err)}, 0, true
		}
		pid, err := start()
		return spawnResult{err: err}, pid, false
	}
	pid, err = start()
	if merr := home.moveBack(); merr != nil {
		if err == nil {
			abort()
		}
		return spawnResult{err: stuckError(merr)}, 0, true
	}
	if err != nil {
		return spawnResult{err: err}, 0, false
	}
	return spawnResult{bornIn: BornIn(pid, dirs)}, pid, false
}

func stuckError(err error) error {
	return wrap("native: moving the spawner thread back out of the world's cgroup", err)
}

// CgroupRoot is where cgroup hierarchies are mounted.
const CgroupRoot = "/sys/fs/cgroup"

// V1Controllers are the hierarchies a world joins on cgroup v1: the
// three it limits and the freezer that makes killing race-free.
var V1Controllers = []string{"memory", "pids", "cpu", "freezer"}

// V1Dirs are the directories of a group in every hierarchy of
// V1Controllers, the last first, group naming its path in each.
func V1Dirs(group func(controller string) string) []string {
	var dirs []string
	for i := len(V1Controllers) - 1; i >= 0; i-- {
		c := V1Controllers[i]
		dirs = append(dirs, path.Join(CgroupRoot, c, group(c)))
	}
	return dirs
}

// GroupsV1 are the directories of the groups a cgroup file of /proc
// (/proc/PID/cgroup, /proc/thread-self/cgroup) names, one per hierarchy
// of V1Controllers, in V1Dirs's order.
func GroupsV1(file string) ([]string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	paths := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		// hierarchy-ID:controller,controller:path; v2's has no controllers.
		f := strings.SplitN(l, ":", 3)
		if len(f) != 3 || f[1] == "" {
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			paths[c] = f[2]
		}
	}
	for _, c := range V1Controllers {
		if _, ok := paths[c]; !ok {
			return nil, errors.New(file + " names no cgroup v1 " + c + " group")
		}
	}
	return V1Dirs(func(c string) string { return paths[c] }), nil
}

// threadHome is the way back to the calling thread's own groups: their
// tasks files, open for writing.
type threadHome []int

// openThreadHome opens the tasks files of the calling thread's groups
// and moves the thread to where it is through them, which proves it may
// move back (the move back then allocates no descriptor in a world's
// memory group).
func openThreadHome() (threadHome, error) {
	dirs, err := GroupsV1("/proc/thread-self/cgroup")
	if err != nil {
		return nil, err
	}
	var h threadHome
	for _, d := range dirs {
		fd, err := syscall.Open(path.Join(d, "tasks"), syscall.O_WRONLY|syscall.O_CLOEXEC, 0)
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
		if _, err := syscall.Write(fd, []byte("0")); err != nil {
			return err
		}
	}
	return nil
}

func (h threadHome) close() {
	for _, fd := range h {
		syscall.Close(fd)
	}
}

// moveThread moves the calling thread into the group dirs (one per
// hierarchy); on an error it is in some of them.
func moveThread(dirs []string) error {
	for _, d := range dirs {
		tasks := path.Join(d, "tasks")
		fd, err := syscall.Open(tasks, syscall.O_WRONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return &os.PathError{Op: "open", Path: tasks, Err: err}
		}
		_, err = syscall.Write(fd, []byte("0"))
		syscall.Close(fd)
		if err != nil {
			return &os.PathError{Op: "write", Path: tasks, Err: err}
		}
	}
	return nil
}

// BornIn reports whether process pid is in the groups dirs: read back,
// for something of the host (an administrator, a service manager) may
// have moved all of dsh meanwhile.
func BornIn(pid int, dirs []string) bool {
	got, err := GroupsV1("/proc/" + strconv.Itoa(pid) + "/cgroup")
	return err == nil && slices.Equal(got, dirs)
}
