package pid1

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// reap collects every exited child without blocking and delivers the
// statuses of the children we started. It reports whether children that
// could still be reaped remain.
//
// With reapAll, wait4(-1) reaps orphans too; the lock, held across fork
// by start, guarantees a direct child is registered before its exit can
// be collected here, so its status is never mistaken for an orphan's.
// Otherwise only our own pids are waited for, leaving other children of
// the process alone.
func (s *server) reap() (remaining bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reapAll {
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if err == unix.EINTR {
				continue
			}
			if err != nil { // ECHILD: no children at all
				return false
			}
			if pid == 0 {
				return true
			}
			s.exitedLocked(pid, ws)
		}
	}
	for pid := range s.children {
		var ws unix.WaitStatus
		wpid, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		for err == unix.EINTR {
			wpid, err = unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		}
		switch {
		case wpid == pid:
			s.exitedLocked(pid, ws)
		case err == unix.ECHILD:
			// Someone else in this process waited for our child, against
			// Serve's contract. Report it rather than hang forever.
			s.log.Error("child reaped behind the init's back", "pid", pid)
			c := s.children[pid]
			delete(s.children, pid)
			c.status <- exitReply{Code: -1}
		}
	}
	return len(s.children) > 0
}

func (s *server) exitedLocked(pid int, ws unix.WaitStatus) {
	c := s.children[pid]
	if c == nil {
		s.log.Debug("reaped orphan", "pid", pid)
		return
	}
	delete(s.children, pid)
	var r exitReply
	switch {
	case ws.Exited():
		r.Code = ws.ExitStatus()
	case ws.Signaled():
		r.Code = -1
		r.Signal = int(ws.Signal())
	default:
		r.Code = -1
	}
	c.status <- r
}

// isSubreaper reports whether this process is a child subreaper, so that
// orphaned descendants are reparented to it.
func isSubreaper() bool {
	var v int32
	if err := unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&v)), 0, 0, 0); err != nil {
		return false
	}
	return v != 0
}

// killChildren SIGKILLs every child of this process, as listed by the
// kernel in /proc/self/task/*/children.
func killChildren() {
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
				unix.Kill(pid, unix.SIGKILL)
			}
		}
	}
}
