package initspawn

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"github.com/dsh-dev/dsh/sandbox/native/initbin"
)

// CachedInitBase is the only state directory the embedded init's file is
// kept in: a root dsh's default (see the native driver's cachesInit).
const CachedInitBase = "/run/dsh-native"

// HaveCachedInit says whether this dsh has an init to cache: one
// embedded, with a well-formed sum.
func HaveCachedInit() bool {
	if initbin.Binary == nil || len(initbin.Sum) != 64 {
		return false
	}
	for _, c := range initbin.Sum {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}

// CachedInitName is the init's file in a state directory: named by the
// content's hash, so that dsh binaries embedding different inits never
// share one.
func CachedInitName(base string) string {
	return base + "/init-" + initbin.Sum[:32]
}

// OpenInitFile opens name for execution if it is what the native driver
// writes there: a regular file of the caller's (no link), mode 0555, one
// name, the embedded init's size.
func OpenInitFile(name string) (*os.File, error) {
	fd, err := syscall.Open(name, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	f := os.NewFile(uintptr(fd), name)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Uid != uint32(os.Getuid()) || st.Mode&0o7777 != 0o555 ||
		st.Nlink != 1 || st.Size != int64(len(initbin.Binary)) {
		f.Close()
		return nil, errors.New("native: " + name + " is not the init dsh wrote (mode " + strconv.FormatUint(uint64(st.Mode&0o7777), 8) + ", owner " + strconv.FormatUint(uint64(st.Uid), 10) + ", " + strconv.FormatUint(uint64(st.Nlink), 10) + " links, " + strconv.FormatInt(st.Size, 10) + " bytes)")
	}
	return f, nil
}

// memfd_create's flags, and fcntl's sealing (linux/memfd.h, fcntl.h).
const (
	mfdCloexec      = 0x1
	mfdAllowSealing = 0x2
	mfdExec         = 0x10
	fAddSeals       = 1033
	fSealSeal       = 0x1
	fSealShrink     = 0x2
	fSealGrow       = 0x4
	fSealWrite      = 0x8
)

// NewMemfd returns a sealed memfd holding b, executable; nil (and no
// error) when the kernel forbids executing memfds (vm.memfd_noexec = 2).
func NewMemfd(b []byte) (*os.File, error) {
	if s, err := os.ReadFile("/proc/sys/vm/memfd_noexec"); err == nil && strings.TrimSpace(string(s)) == "2" {
		return nil, nil
	}
	fd, err := memfdCreate("dsh-init", mfdCloexec|mfdAllowSealing|mfdExec)
	if err == syscall.EINVAL { // before Linux 6.3: no MFD_EXEC, memfds are executable
		fd, err = memfdCreate("dsh-init", mfdCloexec|mfdAllowSealing)
	}
	if err != nil {
		return nil, wrap("native: creating the memfd of the init binary", err)
	}
	f := os.NewFile(uintptr(fd), "dsh-init")
	if err := fillSealed(fd, b); err != nil {
		f.Close()
		return nil, wrap("native: writing the init binary into its memfd", err)
	}
	return f, nil
}

func memfdCreate(name string, flags uintptr) (int, error) {
	if sysMemfdCreate < 0 {
		return -1, syscall.ENOSYS
	}
	p, err := syscall.BytePtrFromString(name)
	if err != nil {
		return -1, err
	}
	fd, _, e := syscall.Syscall(uintptr(sysMemfdCreate), uintptr(unsafe.Pointer(p)), flags, 0)
	if e != 0 {
		return -1, e
	}
	return int(fd), nil
}

func fillSealed(fd int, b []byte) error {
	if err := syscall.Ftruncate(fd, int64(len(b))); err != nil {
		return err
	}
	for off := 0; off < len(b); {
		n, err := syscall.Pwrite(fd, b[off:], int64(off))
		if err != nil {
			return err
		}
		if n == 0 {
			return errors.New("short write")
		}
		off += n
	}
	_, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), fAddSeals, fSealSeal|fSealShrink|fSealGrow|fSealWrite)
	if e != 0 {
		return e
	}
	return nil
}
