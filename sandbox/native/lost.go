package native

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// protectInit lowers the init's oom_score_adj to -1000, so the OOM killer
// never picks it; the processes it starts begin at 0 (see pid1). Only a
// caller with CAP_SYS_RESOURCE may; otherwise the init keeps dsh's score
// and its processes begin 1000 above it. Called before the init runs.
func protectInit(pid int) {
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/oom_score_adj", pid), []byte("-1000"), 0)
}

// initFate describes the end of the init pid, whose connection was lost,
// once (later calls return the same text).
type initFate struct {
	pid  int
	cg   worldCgroup
	once sync.Once
	text string
}

func (f *initFate) describe() string {
	f.once.Do(func() { f.text = describeInitEnd(f.pid, f.cg) })
	return f.text
}

// describeInitEnd peeks at the exit of the init (waitid WNOWAIT: the
// driver still reaps it at Close), waiting a moment for a dying one, and
// at the memory cgroup's OOM kill count.
func describeInitEnd(pid int, cg worldCgroup) string {
	var info unix.Siginfo
	// The SIGCHLD part of siginfo_t: si_pid, si_uid, si_status.
	type chld struct {
		signo, errno, code, _ int32
		pid, uid, status      int32
	}
	c := (*chld)(unsafe.Pointer(&info))
	deadline := time.Now().Add(2 * time.Second)
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT|unix.WNOHANG, nil)
		if err != nil {
			return fmt.Sprintf("the world's init (host pid %d) is gone: %v", pid, err)
		}
		if c.pid != 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Sprintf("the world's init (host pid %d) still runs, but its connection failed", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	var what string
	switch c.code {
	case cldKilled, cldDumped:
		what = "was killed by " + unix.SignalName(syscall.Signal(c.status))
	default:
		what = fmt.Sprintf("exited with status %d", c.status)
	}
	msg := fmt.Sprintf("the world's init (host pid %d) %s", pid, what)
	if n := oomKills(cg); n > 0 {
		msg += fmt.Sprintf("; the world's memory cgroup counted %d OOM kill(s): likely out of memory (tmpfs files count against the limit too); raise --memory", n)
	} else if c.code == cldKilled && syscall.Signal(c.status) == syscall.SIGKILL {
		msg += ", from outside the world"
	}
	return msg
}

// oomKills is the oom_kill count of the world's memory cgroup, or 0.
func oomKills(cg worldCgroup) int64 {
	var file string
	switch g := cg.(type) {
	case *cgroupV2:
		file = filepath.Join(g.path, "memory.events")
	case *cgroupV1:
		for _, d := range g.dirs {
			if strings.Contains(d, "/memory/") {
				file = filepath.Join(d, "memory.oom_control")
			}
		}
	}
	if file == "" {
		return 0
	}
	f, err := os.Open(file)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), " "); ok && k == "oom_kill" {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// si_code values of a child's exit (CLD_KILLED, CLD_DUMPED).
const (
	cldKilled = 2
	cldDumped = 3
)
