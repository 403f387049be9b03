package native

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dsh-dev/dsh/sandbox/native/initbin"
	"github.com/dsh-dev/dsh/sandbox/native/initspawn"
)

// The init's start is the part of a world's start the binary's size
// makes slow (its page faults and the package initialisation of every
// dependency of the CLI): the small one starts in a fraction of the
// time. A world executes it, best first, from
//
//   - its file in a root dsh's state directory (initCached): written
//     once, then only opened — a start costs no copy at all;
//   - a sealed memfd this process fills (initMemfd): for an unprivileged
//     caller, and where the state directory's file system refuses to
//     execute (noexec) or to hold it; a 3.7 MB copy per process;
//   - dsh's own binary (initOwn): no init embedded, or neither of the
//     above can be executed. Only slower, just as confined.
//
// Every source is executed through a descriptor: the mapped init may not
// be allowed to look up a path (a test binary in a private directory).
type initSource int

const (
	initCached initSource = iota
	initMemfd
	initOwn
)

func (s initSource) String() string {
	return [...]string{"the init's file in the state directory", "the init's memfd", "dsh's own binary"}[s]
}

// initRefused is set for a source once the kernel (or a security module,
// whose policy no check here can see) refused to execute it: every later
// start of this process skips it.
var initRefused [initOwn]atomic.Bool

// cachedInitBase is the only state directory the init's file is kept
// in: a root dsh's default. Only root can write it (stateBase: root's,
// written by nobody else); a native world's ids are unprivileged and it
// has the directory masked, a docker world never runs as the host's root,
// and no workspace or writable bind may be /run, in it or above it
// (sandbox.CheckWorkspace, sandbox.UserBind). Any other state directory
// — an unprivileged caller's — is written by worlds running with the
// caller's own uid had it ever been inside a workspace, so a file there
// is not trusted as the init: such a caller keeps the per-process memfd. A variable for
// the tests, whose state directories are their own.
var cachedInitBase = initspawn.CachedInitBase

// cachesInit says whether worlds of state directory base run the init's
// file in it (cachedInitBase) rather than the memfd.
func cachesInit(base string) bool {
	return os.Geteuid() == 0 && base == cachedInitBase && initspawn.HaveCachedInit()
}

// openCachedInit opens the embedded init's file in the state directory
// base, writing it first when it is missing or not exactly as dsh leaves
// it. Nothing but root writes base (cachesInit), so the checks of
// initspawn.OpenInitFile guard against a half-written or stale file, not a planted
// one.
func openCachedInit(base string) (*os.File, error) {
	name := initspawn.CachedInitName(base)
	f, err := initspawn.OpenInitFile(name)
	if err == nil {
		return f, nil
	}
	if err := writeCachedInit(base, name); err != nil {
		return nil, err
	}
	return initspawn.OpenInitFile(name)
}

// writeCachedInit writes the embedded init to name: a temporary file
// made whole (written, 0555, synced) before it is renamed into place, so
// that no start ever opens a part of one. It then removes what earlier
// dsh versions and abandoned writes left.
func writeCachedInit(base, name string) error {
	tmp, err := os.CreateTemp(base, ".init-*")
	if err != nil {
		return fmt.Errorf("native: writing the init binary into the state directory: %w", err)
	}
	defer os.Remove(tmp.Name()) // after a rename: nothing there
	_, err = tmp.Write(initbin.Binary)
	if err == nil {
		err = tmp.Chmod(0o555)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), name)
	}
	if err != nil {
		return fmt.Errorf("native: writing the init binary into the state directory: %w", err)
	}
	sweepCachedInits(base, name, tmp.Name())
	return nil
}

// keptInits is how many inits of other dsh binaries a state directory
// keeps beside the one just written: two versions used in turn never
// rewrite each other's, and a machine that builds dsh often does not
// fill its /run (a tmpfs) with one 3.7 MB copy per build.
const keptInits = 3

// sweepCachedInits removes from base the inits of other dsh binaries
// but the keptInits newest, and temporary files of writes abandoned more
// than a minute ago. A dsh starting a world on a removed init holds its
// descriptor; one that finds its init gone writes it again.
func sweepCachedInits(base, keep, writing string) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	type old struct {
		path string
		mod  time.Time
	}
	var others []old
	for _, e := range entries {
		p := filepath.Join(base, e.Name())
		fi, err := e.Info()
		switch {
		case err != nil || p == keep || p == writing:
		case strings.HasPrefix(e.Name(), "init-"):
			others = append(others, old{p, fi.ModTime()})
		case strings.HasPrefix(e.Name(), ".init-") && time.Since(fi.ModTime()) > time.Minute:
			_ = os.Remove(p)
		}
	}
	slices.SortFunc(others, func(a, b old) int { return b.mod.Compare(a.mod) })
	for _, o := range others[min(len(others), keptInits):] {
		_ = os.Remove(o.path)
	}
}

// sharedMemfd returns this process's sealed memfd holding the embedded
// init, made on first use and kept: every world of the process executes
// the same one. It is nil when the kernel forbids executing memfds
// (vm.memfd_noexec = 2).
func sharedMemfd() (*os.File, error) {
	memfdOnce.Do(func() { memfdFile, memfdErr = initspawn.NewMemfd(initbin.Binary) })
	return memfdFile, memfdErr
}

var (
	memfdOnce sync.Once
	memfdFile *os.File
	memfdErr  error
)

// openInitSource opens the best source of the init not refused yet: the
// embedded init (when embedded is allowed and dsh has one) from its file
// in the state directory base or from the process's memfd, else dsh's
// own binary exe. The memfd is the process's: its caller must not close
// it.
func openInitSource(embedded bool, base, exe string) (*os.File, initSource, error) {
	if embedded && initbin.Binary != nil {
		if cachesInit(base) && !initRefused[initCached].Load() {
			if f, err := openCachedInit(base); err == nil {
				return f, initCached, nil
			}
			// The file system holds no file of ours (full, read-only):
			// the memfd serves, as it does where it cannot execute.
		}
		if !initRefused[initMemfd].Load() {
			if f, err := sharedMemfd(); err == nil && f != nil {
				return f, initMemfd, nil
			}
		}
	}
	f, err := os.Open(exe)
	if err != nil {
		return nil, initOwn, fmt.Errorf("native: opening dsh's own binary to run as the init: %w", err)
	}
	return f, initOwn, nil
}

// refusedInit reports whether err is the kernel refusing to execute the
// init's source src (a noexec mount, a security module): the start then
// tries the next source.
func refusedInit(src initSource, err error) bool {
	return err != nil && src != initOwn && (errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM))
}
