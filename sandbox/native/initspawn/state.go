package initspawn

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// StateDirs are the native state directories of uid, best first: what
// sandbox.StateDirs names (a test holds the two alike).
func StateDirs(uid int) []string {
	return []string{"/run/dsh-native", "/run/user/" + strconv.Itoa(uid) + "/dsh-native", "/tmp/dsh-native-" + strconv.Itoa(uid)}
}

// DefaultStateDir is the state directory of uid's worlds when none is
// configured: root's under /run where root may write it, else under the
// login's private /run/user/UID, else under /tmp.
func DefaultStateDir(uid int) string {
	dirs := StateDirs(uid)
	switch {
	case uid == 0 && syscall.Access("/run", 2 /* W_OK */) == nil:
		return dirs[0]
	case PrivateDir(strings.TrimSuffix(dirs[1], "/dsh-native"), uid):
		return dirs[1]
	default:
		return dirs[2]
	}
}

// PrivateDir reports whether p is a directory of uid's that no one else
// may write (a login's /run/user/UID).
func PrivateDir(p string, uid int) bool {
	fi, err := os.Lstat(p)
	if err != nil || !fi.IsDir() {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == uid && fi.Mode().Perm()&0o022 == 0
}

// StartTime is process pid's start in clock ticks since boot (field 22
// of /proc/PID/stat): with the pid, it names a process across pid reuse.
func StartTime(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name may contain spaces and parentheses; fields
	// after it start behind the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("parsing /proc/" + strconv.Itoa(pid) + "/stat")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0, errors.New("parsing /proc/" + strconv.Itoa(pid) + "/stat")
	}
	return strconv.ParseUint(f[19], 10, 64)
}
