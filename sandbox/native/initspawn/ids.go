package initspawn

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// DefaultIDBase is the first host uid and gid of a root dsh's worlds when
// Options.IDBase is zero and /etc/subuid and /etc/subgid hold no range
// for user "dsh" or "root": 0x70000000, above the range systemd assigns
// to containers (524288-1879048191) and the ranges useradd hands out
// (from 100000), below 2^31.
const DefaultIDBase = 0x70000000

// IDRangeSize is how many ids a world has: 0-65535 inside.
const IDRangeSize = 65536

// subidUsers are the /etc/subuid and /etc/subgid entries whose range a
// root dsh uses, in order of preference.
var subidUsers = []string{"dsh", "root"}

// Subordinate returns the start of the first range of at least
// IDRangeSize ids that file grants "dsh", else "root", else def.
func Subordinate(file string, def uint32) uint32 {
	f, err := os.Open(file)
	if err != nil {
		return def
	}
	defer f.Close()
	found := map[string]uint32{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(strings.TrimSpace(sc.Text()), ":")
		if len(fields) != 3 {
			continue
		}
		start, err1 := strconv.ParseUint(fields[1], 10, 32)
		count, err2 := strconv.ParseUint(fields[2], 10, 32)
		if err1 != nil || err2 != nil || start == 0 || count < IDRangeSize {
			continue
		}
		if _, ok := found[fields[0]]; !ok {
			found[fields[0]] = uint32(start)
		}
	}
	for _, u := range subidUsers {
		if b, ok := found[u]; ok {
			return b
		}
	}
	return def
}

// UsableIDBase says whether a world's host range may start at b: it must
// not contain host id 0 (that would hand the world host root) and must
// end below 2^32-1.
func UsableIDBase(b uint32) bool { return b != 0 && uint64(b)+IDRangeSize <= 1<<32-1 }

// MapIDs writes the id maps of the init pid's user namespace, then tells
// the init on its sync socket that they are written: until then it waits
// (nsinit). A root caller's init (mapped) maps the host range uid, gid
// from 0 and is told to become its root: writing the maps does not
// change its own ids, which are still host uid 0. An unprivileged
// caller's maps its own uid and gid alone, and denies setgroups, which
// the kernel requires of a map written without CAP_SETGID over the
// parent namespace.
func MapIDs(pid int, sync *os.File, mapped bool, uid, gid uint32) error {
	uids := []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
	gids := []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
	become := KeepIDs
	if mapped {
		uids = []syscall.SysProcIDMap{{ContainerID: 0, HostID: int(uid), Size: IDRangeSize}}
		gids = []syscall.SysProcIDMap{{ContainerID: 0, HostID: int(gid), Size: IDRangeSize}}
		become = BecomeRoot
	}
	proc := "/proc/" + strconv.Itoa(pid) + "/"
	write := func(file, s string) error {
		if err := os.WriteFile(proc+file, []byte(s), 0); err != nil {
			return wrap("native: writing the init's "+file, err)
		}
		return nil
	}
	if !mapped {
		if err := write("setgroups", "deny"); err != nil {
			return err
		}
	}
	if err := write("gid_map", IDMapText(gids)); err != nil {
		return err
	}
	if err := write("uid_map", IDMapText(uids)); err != nil {
		return err
	}
	if _, err := sync.Write([]byte{become}); err != nil {
		return wrap("native: telling the init its ids are mapped", err)
	}
	return nil
}

// IDMapText is m as a uid_map or gid_map file takes it.
func IDMapText(m []syscall.SysProcIDMap) string {
	var b []byte
	for _, e := range m {
		b = strconv.AppendInt(b, int64(e.ContainerID), 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(e.HostID), 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(e.Size), 10)
		b = append(b, '\n')
	}
	return string(b)
}
