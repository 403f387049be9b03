package pid1

import (
	"bytes"
	"os"
	"strconv"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// oomScore is the init's own /proc/self/oom_score_adj. The processes the
// init starts begin 1000 above it (at most 1000), so the OOM killer ranks
// every one of them above the init — tmpfs files and socket buffers are
// charged to the world's memory cgroup but to no process's RSS, and
// without this the init, the largest process, would be its victim. A
// driver with CAP_SYS_RESOURCE lowers the init to -1000 (never a victim);
// its processes then begin at 0. A fork copies the score, so the init
// raises its own around each fork (allowed without privilege) and lowers
// it back after (allowed down to its oom_score_adj_min, which a
// privileged write sets too, and forks copy).
//
// A process may lower itself again, down to that minimum: to the init's
// -1000 when the driver lowered it (then a memory cgroup OOM may find no
// victim, and the world stalls until the driver closes it), else to the
// init's own score (then the OOM killer may pick the init, and the driver
// reports the world lost, never a command's success).
type oomScore struct {
	f      *os.File
	broken atomic.Bool // lowering back failed once: stay at 0
}

// openOOMScore opens the init's score, or returns nil (no /proc: nothing
// to adjust, and nothing a driver could have lowered).
func openOOMScore() *oomScore {
	f, err := os.OpenFile("/proc/self/oom_score_adj", os.O_RDWR, 0)
	if err != nil {
		return nil
	}
	return &oomScore{f: f}
}

// forChild raises the init's score to its children's for a fork, and
// returns the function that restores it. The caller holds the spawn lock
// from forChild to restore, so no fork sees the lowered score.
func (o *oomScore) forChild() (restore func()) {
	nothing := func() {}
	if o == nil || o.broken.Load() {
		return nothing
	}
	var buf [16]byte
	n, _ := o.f.ReadAt(buf[:], 0) // io.EOF with the whole value
	if n == 0 {
		return nothing
	}
	own, err := strconv.Atoi(string(bytes.TrimSpace(buf[:n])))
	child := min(own+1000, 1000)
	if err != nil || child == own || o.write(child) != nil {
		return nothing
	}
	return func() {
		if o.write(own) != nil {
			// The init stays as killable as its processes; its loss is
			// then reported as one (see the client's ErrConnLost).
			o.broken.Store(true)
		}
	}
}

func (o *oomScore) write(score int) error {
	rc, err := o.f.SyscallConn()
	if err != nil {
		return err
	}
	var werr error
	rc.Control(func(fd uintptr) {
		_, werr = unix.Pwrite(int(fd), []byte(strconv.Itoa(score)), 0)
	})
	return werr
}
