package native

import (
	"os/exec"

	"github.com/dsh-dev/dsh/sandbox/native/initspawn"
)

// startPinned runs cmd.Start on the spawner thread, inside the cgroup v1
// groups dirs where the thread may move (initspawn.Spawn); bornIn says it
// did. Otherwise the caller places the init by its pid. started (nil for
// none) runs next on the same thread; if it fails, the process is killed
// and reaped.
func startPinned(cmd *exec.Cmd, dirs []string, started func(pid int) error) (bornIn bool, err error) {
	return initspawn.Spawn(dirs, func() (int, error) {
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	}, started, func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
}
