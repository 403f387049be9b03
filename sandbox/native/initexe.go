package native

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// embeddedInit is the small init binary (cmd/dsh-init) built into dsh
// with the build tag embedinit (initexe_embed.go), or nil: the init is
// then dsh's own binary.
var embeddedInit []byte

// initMemfd returns a sealed memfd holding the embedded init, ready to
// be executed through /proc/self/fd, or nil when there is none or the
// kernel forbids executing memfds (vm.memfd_noexec = 2): the caller then
// runs dsh's own binary as before. The init's start is the part of a
// world's start the binary's size makes slow (its page faults and the
// package initialisation of every dependency of the CLI): the small one
// starts in a fraction of the time. A memfd, not a file: nothing on disk
// that another process of the caller, or a world with a writable view of
// the state directory, could replace between two starts; sealed, so
// nothing can change it once written.
//
// It is made once per process, on first use, and kept: every world this
// process starts executes the same memfd.
// prepareInit begins it in the background so that the copy overlaps the
// start's first steps.
func initMemfd() (*os.File, error) {
	if noInitMemfd.Load() {
		return nil, nil
	}
	prepareInit()
	<-initDone
	return initFile, initErr
}

var (
	// noInitMemfd is set once executing the memfd was refused: every
	// later world runs dsh's own binary.
	noInitMemfd atomic.Bool
	initOnce    sync.Once
	initDone    = make(chan struct{})
	initFile    *os.File
	initErr     error
)

// PrepareInit begins making the embedded init's memfd in the background,
// if dsh embeds one: a command about to open a world calls it first, so
// that the copy overlaps its configuration and planning. Calling it is
// never needed (a start makes the memfd when missing) and a second call
// does nothing.
func PrepareInit() { prepareInit() }

// prepareInit begins making the init's memfd, if dsh embeds one.
func prepareInit() {
	initOnce.Do(func() {
		go func() {
			initFile, initErr = makeInitMemfd()
			close(initDone)
		}()
	})
}

func makeInitMemfd() (*os.File, error) {
	if embeddedInit == nil {
		return nil, nil
	}
	if b, err := os.ReadFile("/proc/sys/vm/memfd_noexec"); err == nil && strings.TrimSpace(string(b)) == "2" {
		return nil, nil
	}
	fd, err := unix.MemfdCreate("dsh-init", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_EXEC)
	if err == unix.EINVAL { // before Linux 6.3: no MFD_EXEC, memfds are executable
		fd, err = unix.MemfdCreate("dsh-init", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	}
	if err != nil {
		return nil, fmt.Errorf("native: creating the memfd of the init binary: %w", err)
	}
	f := os.NewFile(uintptr(fd), "dsh-init")
	if err := fillSealed(fd, embeddedInit); err != nil {
		f.Close()
		return nil, fmt.Errorf("native: writing the init binary into its memfd: %w", err)
	}
	return f, nil
}

func fillSealed(fd int, b []byte) error {
	if err := unix.Ftruncate(fd, int64(len(b))); err != nil {
		return err
	}
	for off := 0; off < len(b); {
		n, err := unix.Pwrite(fd, b[off:], int64(off))
		if err != nil {
			return err
		}
		off += n
	}
	_, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS,
		unix.F_SEAL_SEAL|unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE)
	return err
}
