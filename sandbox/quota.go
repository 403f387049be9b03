package sandbox

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ProjectQuota is what a workspace's file system offers for bounding
// everything a world writes into it: a project quota (ext4 or xfs with
// project quotas on). dsh does not set one yet; the report says whether
// one could hold here, and why not.
type ProjectQuota struct {
	// On reports whether project quotas are enforced on the workspace's
	// file system.
	On bool `json:"on"`
	// FS and Mount are the file system type and where it is mounted;
	// Source its device.
	FS     string `json:"fs,omitempty"`
	Mount  string `json:"mount,omitempty"`
	Source string `json:"source,omitempty"`
	// Why says what was found, and with On false what it would take.
	Why string `json:"why"`
}

// quotaFS are the file systems with project quotas, by statfs magic.
var quotaFS = map[int64]string{0xef53: "ext4", 0x58465342: "xfs"}

// Quota commands (linux/quota.h).
const (
	qGetInfo   = 0x800005
	prjQuota   = 2
	subCmdMask = 0xff
	subCmdSh   = 8
)

// ifDqinfo is struct if_dqinfo.
type ifDqinfo struct {
	Bgrace, Igrace uint64
	Flags, Valid   uint32
}

// ProbeProjectQuota reports whether project quotas are on for the file
// system holding path: it asks the kernel (quotactl_fd Q_GETINFO for
// project quotas, which needs no privilege), and names the mount.
func ProbeProjectQuota(path string) ProjectQuota {
	var q ProjectQuota
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		q.Why = fmt.Sprintf("%s: %v", path, err)
		return q
	}
	q.Mount, q.FS, q.Source = mountOf(path)
	fs, ok := quotaFS[int64(st.Type)]
	if !ok {
		if q.FS == "" {
			q.FS = fmt.Sprintf("magic %#x", st.Type)
		}
		q.Why = fmt.Sprintf("%s is on %s, which has no project quotas (ext4 and xfs have them)", path, q.FS)
		return q
	}
	q.FS = fs
	f, err := os.Open(path)
	if err != nil {
		q.Why = fmt.Sprintf("%s: %v", path, err)
		return q
	}
	defer f.Close()
	var info ifDqinfo
	cmd := uintptr(qGetInfo<<subCmdSh | prjQuota&subCmdMask)
	_, _, e := unix.Syscall6(unix.SYS_QUOTACTL_FD, f.Fd(), cmd, 0, uintptr(unsafe.Pointer(&info)), 0, 0)
	where := fmt.Sprintf("%s (%s on %s)", q.FS, q.Source, q.Mount)
	switch {
	case e == 0:
		q.On = true
		q.Why = "project quotas are on for " + where
	case errors.Is(e, unix.ENOSYS):
		q.Why = fmt.Sprintf("cannot tell: this kernel has no quotactl_fd (Linux 5.14): %v", e)
	case errors.Is(e, unix.ESRCH):
		fix := "mount it with prjquota (and on ext4 enable the feature first: tune2fs -O project,quota)"
		option := "CONFIG_QFMT_V2"
		if q.FS == "xfs" {
			fix, option = "mount it with prjquota (xfs turns quotas on only at mount)", "CONFIG_XFS_QUOTA"
		}
		if kernelLacks(option) {
			fix = fmt.Sprintf("this kernel is built without %s, so they cannot be turned on here", option)
		}
		q.Why = fmt.Sprintf("project quotas are off for %s: %s", where, fix)
	default:
		q.Why = fmt.Sprintf("project quotas are not available for %s: %v", where, e)
	}
	return q
}

// mountOf finds the mount holding path in /proc/self/mountinfo: the one
// of the same device with the longest mount point above path.
func mountOf(path string) (mount, fstype, source string) {
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil {
		return "", "", ""
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", "", ""
	}
	defer f.Close()
	dev := fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS…] - TYPE SOURCE SUPER
		l := sc.Text()
		fl := strings.Fields(l)
		_, tail, ok := strings.Cut(l, " - ")
		tf := strings.Fields(tail)
		if !ok || len(fl) < 5 || len(tf) < 2 || fl[2] != dev {
			continue
		}
		mp := unescapeMount(fl[4])
		if (IsBelowDir(path, mp)) && len(mp) >= len(mount) {
			mount, fstype, source = mp, tf[0], tf[1]
		}
	}
	return mount, fstype, source
}

// IsBelowDir reports whether path is dir or inside it.
func IsBelowDir(path, dir string) bool {
	return dir == "/" || path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var c byte
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &c); err == nil {
				b.WriteByte(c)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// kernelLacks reports whether the running kernel's configuration
// (/proc/config.gz, where the kernel offers it) says option is not set.
func kernelLacks(option string) bool {
	f, err := os.Open("/proc/config.gz")
	if err != nil {
		return false
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return false
	}
	sc := bufio.NewScanner(z)
	for sc.Scan() {
		if sc.Text() == "# "+option+" is not set" {
			return true
		}
	}
	return false
}
