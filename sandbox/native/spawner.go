package native

import (
	"os/exec"
	"runtime"
	"sync"
)

// The init's parent-death signal fires when the OS thread that forked it
// exits, not only when dsh does. Go ends a thread when a goroutine that
// locked it returns, which may happen to any thread later. So every init
// is forked from one thread that is locked for the life of the process
// and never exits.
var spawner struct {
	once sync.Once
	reqs chan spawnReq
}

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

// startPinned runs cmd.Start on the spawner thread.
func startPinned(cmd *exec.Cmd) error {
	spawner.once.Do(func() {
		spawner.reqs = make(chan spawnReq)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as dsh
			for r := range spawner.reqs {
				r.done <- r.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	spawner.reqs <- spawnReq{cmd: cmd, done: done}
	return <-done
}
