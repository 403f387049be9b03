package docker

import (
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/dsh-dev/dsh/sandbox"
)

// owner identifies this dsh process in labels.
type owner struct {
	pid   int
	start string
	host  string
}

func self() owner {
	h, _ := os.Hostname()
	return owner{pid: os.Getpid(), start: procStart(os.Getpid()), host: h}
}

func (o owner) labels(worldID string, extra map[string]string) map[string]string {
	l := make(map[string]string, len(extra)+5)
	for k, v := range extra {
		l[k] = v
	}
	// dsh's own labels win over a Spec's, so reaping cannot be fooled.
	l[sandbox.LabelManaged] = "true"
	l[sandbox.LabelWorld] = worldID
	l[sandbox.LabelOwnerPID] = strconv.Itoa(o.pid)
	l[sandbox.LabelOwnerStart] = o.start
	l[sandbox.LabelOwnerHost] = o.host
	return l
}

// ownerGone reports whether labels name an owner on this host that is no
// longer running. Resources without owner labels, or owned by another
// host, are never judged gone: they are not this machine's to reap.
func ownerGone(labels map[string]string, host string) bool {
	if labels[sandbox.LabelOwnerHost] != host {
		return false
	}
	pid, err := strconv.Atoi(labels[sandbox.LabelOwnerPID])
	if err != nil || pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
		return true
	}
	// The pid is in use; by the owner only if it started at the same time.
	if want := labels[sandbox.LabelOwnerStart]; want != "" {
		if got := procStart(pid); got != "" && got != want {
			return true
		}
	}
	return false
}

// procStart returns the start time of pid from /proc/<pid>/stat (field
// 22, after the parenthesised command name, which may hold spaces), or ""
// when it cannot be read.
func procStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state), so field 22 is f[19].
	if len(f) < 20 {
		return ""
	}
	return f[19]
}
