package pid1

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
)

// forker forks the world's processes from one OS thread that has joined
// their own cgroup (cgroup v1, where a cgroup holds threads). A child is
// born in its forking thread's group and the kernel checks that group's
// pids limit at the fork, so the world's processes are held to exactly
// their limit, while the init's other threads — the runtime's, started
// whenever it needs one — stay in the world's group above, whose room
// the world's processes cannot take. The runtime never starts a thread
// from a locked one (it asks its template thread), so nothing of the
// init but this thread is charged to the processes' group.
type forker struct {
	reqs chan forkRequest
}

type forkRequest struct {
	path string
	argv []string
	attr *syscall.ProcAttr
	done chan forkResult
}

type forkResult struct {
	pid int
	err error
}

// newForker starts the forking thread. group is the tasks file of the
// processes' group, opened by the driver (the kernel checks its opener's
// credentials, which the world lacks). The thread joins the group just
// before its first fork: the first command comes after the driver has
// placed the init in the world's group, a placement by pid that moves
// every thread, this one back out too.
func newForker(group *os.File) *forker {
	f := &forker{reqs: make(chan forkRequest)}
	go f.run(group)
	return f
}

func (f *forker) run(group *os.File) {
	// Never unlocked: the thread belongs to the processes' group, and
	// ends with the init.
	runtime.LockOSThread()
	var joinErr error
	for r := range f.reqs {
		if group != nil { // the first fork
			joinErr = join(group)
			group.Close()
			group = nil
		}
		if joinErr != nil {
			r.done <- forkResult{err: joinErr}
			continue
		}
		pid, err := syscall.ForkExec(r.path, r.argv, r.attr)
		r.done <- forkResult{pid, err}
	}
	if group != nil { // never forked
		group.Close()
	}
}

// join moves the calling thread into the group whose tasks file is
// group. "0" names the writer alone, which the kernel moves at once; a
// write naming a thread by id waits for an RCU grace period.
func join(group *os.File) error {
	if _, err := group.Write([]byte("0")); err != nil {
		return &StartError{Msg: fmt.Sprintf("joining the world's processes' cgroup: %v; without it the init cannot hold them to their pids limit, so it starts none", err)}
	}
	return nil
}

// forkExec is syscall.ForkExec on the forking thread.
func (f *forker) forkExec(path string, argv []string, attr *syscall.ProcAttr) (int, error) {
	done := make(chan forkResult, 1)
	f.reqs <- forkRequest{path, argv, attr, done}
	r := <-done
	return r.pid, r.err
}
