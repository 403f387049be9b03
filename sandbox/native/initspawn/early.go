package initspawn

import (
	"errors"
	"io"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/dsh-dev/dsh/sandbox/native/initbin"
)

// Early is an init Begin spawned for the first world of a dsh run line,
// what it was spawned for, and dsh's ends of what it inherited. The
// native driver takes it (Take) as the init of a world of a Driver with
// default Options, once it has checked that this is what such a world
// would spawn; whatever it does not take, it kills.
type Early struct {
	Process *os.Process
	Began   time.Time // when its spawn began (DSH_NATIVE_TRACE)
	BornIn  bool      // it started in Groups
	// Limited says it was spawned for a world with limits, in Groups; a
	// world without has no cgroup, and its init is spawned in none.
	Limited bool

	// dsh's ends: the sync socket, the ready pipe, the pid1 session's
	// pipes, the stdio and egress broker sockets.
	Sync, Ready, CtlR, CtlW, Stdio, Broker *os.File
	// Memfd is the process's memfd of the embedded init, when the init
	// runs from one (a caller that caches no init file); nil otherwise.
	Memfd *os.File

	// What it was spawned for: a root caller (Mapped) maps the world's
	// ids from host UID and GID; dsh's own binary; the state directory;
	// its standard error is dsh's (Trace) or /dev/null.
	Mapped   bool
	UID, GID uint32
	Exe      string
	Base     string
	Trace    bool

	// WorldID is the ID its world takes (sandbox.ReserveWorldIDOf);
	// Name, the owner and world ID, names its cgroup v1 group under
	// CgroupParent: Groups, one per hierarchy (V1Dirs), or nil when none
	// could be made (GroupsErr) or it is not Limited.
	WorldID   string
	Name      string
	Groups    []string
	GroupsErr error
}

// CgroupParent is the cgroup every native world's group is made in,
// relative to each hierarchy's root.
const CgroupParent = "dsh-native"

var early struct {
	done chan struct{}
	e    *Early
}

// Begin spawns, in the background, the init of the first world of a dsh
// run line, for a Driver with default Options and a world with limits
// (limited: the init is born in the world's cgroup v1 groups) or without
// (in none): it is called during
// dsh's package initialisation (cmd/dsh/internal/prestart), where this
// package is among the first initialised, so the init's clone, execve
// and runtime start run beside dsh's own start. It gives up, leaving the
// spawn to the driver, wherever that spawn would be other than the usual
// one: cgroup v2 (the init is born in the world's group, which needs the
// world's plan), no embedded init, no usable id range, a state directory
// or a cached init file that is not there yet (the driver makes them).
// The init runs nothing before its world's release. Calling Begin again
// does nothing.
func Begin(limited bool) {
	if early.done != nil {
		return
	}
	done := make(chan struct{})
	early.done = done
	go func() {
		defer close(done)
		early.e = begin(limited)
	}()
}

// Take waits for Begin's spawn and returns it, nil if Begin was never
// called or gave up; the caller owns it. Later calls return nil.
func Take() *Early {
	if early.done == nil {
		return nil
	}
	<-early.done
	e := early.e
	early.e = nil
	return e
}

func begin(limited bool) *Early {
	var fs syscall.Statfs_t
	if initbin.Binary == nil || syscall.Statfs(CgroupRoot, &fs) != nil || fs.Type == cgroup2Magic {
		return nil
	}
	e := &Early{Began: time.Now(), Limited: limited, Mapped: os.Geteuid() == 0, Trace: os.Getenv("DSH_NATIVE_TRACE") == "1"}
	if e.Mapped {
		e.UID = Subordinate("/etc/subuid", DefaultIDBase)
		e.GID = Subordinate("/etc/subgid", DefaultIDBase)
		if !UsableIDBase(e.UID) || !UsableIDBase(e.GID) {
			return nil
		}
	}
	var err error
	if e.Exe, err = os.Executable(); err != nil {
		return nil
	}
	uid := os.Getuid()
	if e.Base = DefaultStateDir(uid); !stateDirReady(e.Base, uid, e.Mapped) {
		return nil
	}
	if e.WorldID, err = mintWorldID(); err != nil {
		return nil
	}
	start, err := StartTime(os.Getpid())
	if err != nil {
		return nil
	}
	e.Name = strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(start, 10) + "-" + e.WorldID
	// The binary: a root caller's cached file (the driver writes it when
	// missing: then it spawns), else the process's memfd.
	var exe *os.File
	if e.Mapped && e.Base == CachedInitBase {
		if !HaveCachedInit() {
			return nil
		}
		if exe, err = OpenInitFile(CachedInitName(e.Base)); err != nil {
			return nil
		}
		defer exe.Close()
	} else {
		if exe, err = NewMemfd(initbin.Binary); exe == nil || err != nil {
			return nil
		}
		e.Memfd = exe
	}
	if limited {
		e.Groups, e.GroupsErr = makeGroups(e.Name)
	}
	if !e.spawn(exe) {
		removeGroups(e.Groups)
		if e.Memfd != nil {
			e.Memfd.Close()
		}
		return nil
	}
	return e
}

// cgroup2Magic is the cgroup v2 file system's statfs type.
const cgroup2Magic = 0x63677270

// stateDirReady says whether the state directory base is there as the
// driver leaves it: a directory of uid's that no one else may read or
// write, searchable by a root caller's mapped worlds (0711).
func stateDirReady(base string, uid int, mapped bool) bool {
	fi, err := os.Lstat(base)
	if err != nil || !fi.IsDir() {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	perm := fi.Mode().Perm()
	return ok && int(st.Uid) == uid && perm&0o066 == 0 && (!mapped || perm == 0o711)
}

// mintWorldID is a fresh world ID as sandbox mints them: 5 random bytes
// in hex.
func mintWorldID() (string, error) {
	f, err := os.Open("/dev/urandom")
	if err != nil {
		return "", err
	}
	defer f.Close()
	var b [5]byte
	if _, err := io.ReadFull(f, b[:]); err != nil {
		return "", err
	}
	const digits = "0123456789abcdef"
	id := make([]byte, 0, 2*len(b))
	for _, c := range b {
		id = append(id, digits[c>>4], digits[c&15])
	}
	return string(id), nil
}

// makeGroups makes the world's group name under CgroupParent in every
// hierarchy of V1Controllers (the driver gives it its limits before the
// init's release), or nothing: a caller with no delegated cgroup gets
// none, as the driver's own spawn would.
func makeGroups(name string) ([]string, error) {
	dirs := V1Dirs(func(string) string { return CgroupParent + "/" + name })
	for i, d := range dirs {
		parent := d[:len(d)-len(name)-1]
		if err := os.Mkdir(parent, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			removeGroups(dirs[:i])
			return nil, err
		}
		if err := os.Mkdir(d, 0o755); err != nil {
			removeGroups(dirs[:i])
			return nil, err
		}
	}
	return dirs, nil
}

func removeGroups(dirs []string) {
	for _, d := range dirs {
		_ = os.Remove(d)
	}
}

// spawn makes the init's descriptors and starts it from exe, born in
// e.Groups where there are some, and writes its id maps.
func (e *Early) spawn(exe *os.File) bool {
	ch, err := NewChannels(true)
	if err != nil {
		return false
	}
	defer ch.CloseChild()
	stderr := os.Stderr // the init's step timings
	if !e.Trace {
		if stderr, err = os.OpenFile(os.DevNull, os.O_WRONLY, 0); err != nil {
			ch.Close()
			return false
		}
		defer stderr.Close()
	}
	stdin, stdout := ch.Session()
	attr := &os.ProcAttr{
		Env:   Env(e.Base),
		Files: append([]*os.File{stdin, stdout, stderr}, ch.ExtraFiles(exe)...),
		Sys:   Attr(e.Mapped, -1),
	}
	var p *os.Process
	born, err := Spawn(e.Groups, func() (int, error) {
		var serr error
		if p, serr = os.StartProcess(Path, Argv(), attr); serr != nil {
			return 0, serr
		}
		return p.Pid, nil
	}, func(pid int) error {
		return MapIDs(pid, ch.Sync, e.Mapped, e.UID, e.GID)
	}, func() {
		_ = p.Kill()
		_, _ = p.Wait()
	})
	if err != nil {
		ch.Close()
		return false
	}
	e.Process, e.BornIn = p, born
	e.Sync, e.Ready, e.Broker, e.Stdio, e.CtlW, e.CtlR = ch.Sync, ch.Ready, ch.Broker, ch.Stdio, ch.CtlW, ch.CtlR
	return true
}

func closeFiles(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}
