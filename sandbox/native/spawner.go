package native

import (
	"fmt"
	"os/exec"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// The init's parent-death signal fires when the OS thread that forked it
// exits, not only when dsh does. Go ends a thread when a goroutine that
// locked it returns, which may happen to any thread later. So every init
// is forked from one thread that is locked for the life of the process
// and never exits: the spawner. It is never the main thread, whose
// groups are the memory cgroup every page of dsh is charged to (it moves
// into a world's groups to fork its init: threadcg.go).
var spawner struct {
	once sync.Once
	reqs chan spawnReq
}

type spawnReq struct {
	cmd  *exec.Cmd
	dirs []string // cgroup v1: the world's groups, to start it in
	// started, if not nil, runs on the spawner thread as soon as the
	// process runs (the init's id maps: the init waits for them); if it
	// fails, the process is killed and reaped.
	started func(pid int) error
	done    chan spawnResult
}

type spawnResult struct {
	bornIn bool // the init started in dirs
	err    error
}

// startPinned runs cmd.Start on the spawner thread, inside the cgroup v1
// groups dirs where the thread may move (threadcg.go); bornIn says it
// did. Otherwise the caller places the init by its pid. started (nil
// for none) runs next on the same thread (spawnReq).
func startPinned(cmd *exec.Cmd, dirs []string, started func(pid int) error) (bornIn bool, err error) {
	spawner.once.Do(func() {
		spawner.reqs = make(chan spawnReq)
		go serveSpawns(nil)
	})
	done := make(chan spawnResult, 1)
	spawner.reqs <- spawnReq{cmd: cmd, dirs: dirs, started: started, done: done}
	r := <-done
	return r.bornIn, r.err
}

// serveSpawns locks its goroutine to a thread other than the main one
// and serves spawns from it; started, if not nil, is closed once it
// does.
func serveSpawns(started chan struct{}) {
	runtime.LockOSThread() // never unlocked: the thread lives as long as dsh
	if unix.Gettid() == unix.Getpid() {
		// Held here, the main thread runs nothing else: the next
		// goroutine locks another.
		next := make(chan struct{})
		go serveSpawns(next)
		<-next
		runtime.UnlockOSThread()
		return
	}
	if started != nil {
		close(started)
	}
	for r := range spawner.reqs {
		res, stuck := spawnIn(r.cmd, r.dirs)
		if res.err == nil && r.started != nil {
			if err := r.started(r.cmd.Process.Pid); err != nil {
				_ = r.cmd.Process.Kill()
				_ = r.cmd.Wait()
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

// spawnIn starts cmd inside the v1 groups dirs if this thread may move
// there and back, else where it is. stuck says it could not move back.
func spawnIn(cmd *exec.Cmd, dirs []string) (res spawnResult, stuck bool) {
	if len(dirs) == 0 {
		return spawnResult{err: cmd.Start()}, false
	}
	home, err := openThreadHome()
	if err != nil {
		return spawnResult{err: cmd.Start()}, false
	}
	defer home.close()
	if moveThread(dirs) != nil {
		if err := home.moveBack(); err != nil {
			return spawnResult{err: stuckError(err)}, true
		}
		return spawnResult{err: cmd.Start()}, false
	}
	err = cmd.Start()
	if merr := home.moveBack(); merr != nil {
		if err == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		return spawnResult{err: stuckError(merr)}, true
	}
	if err != nil {
		return spawnResult{err: err}, false
	}
	return spawnResult{bornIn: bornIn(cmd.Process.Pid, dirs)}, false
}

func stuckError(err error) error {
	return fmt.Errorf("native: moving the spawner thread back out of the world's cgroup: %w", err)
}
