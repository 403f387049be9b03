package native

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/internal/seccomptest"
	"github.com/dsh-dev/dsh/sandbox"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// runFilter runs prog in the BPF interpreter on the call nr(args...)
// made through the ABI arch.
func runFilter(t *testing.T, prog []unix.SockFilter, arch, nr uint32, args ...uint64) uint32 {
	t.Helper()
	raw := make([]bpf.RawInstruction, len(prog))
	for i, in := range prog {
		raw[i] = bpf.RawInstruction{Op: in.Code, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	v, err := seccomptest.VM(t, raw).Run(seccomptest.Data(arch, nr, args...))
	if err != nil {
		t.Fatal(err)
	}
	return uint32(v)
}

// The sandbox's filter refuses every name of sandbox.DeniedSyscalls this
// architecture has, new namespaces through clone and unshare, clone3
// (ENOSYS, for the fallback to clone), shmget where asked, and calls
// through another ABI; and lets the rest through.
func TestFilterProgram(t *testing.T) {
	arch, ok := auditArch[runtime.GOARCH]
	if !ok {
		t.Skipf("the native driver does not support %s", runtime.GOARCH)
	}
	const (
		allow uint32 = unix.SECCOMP_RET_ALLOW
		eperm uint32 = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
		nosys uint32 = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
		kill  uint32 = unix.SECCOMP_RET_KILL_PROCESS
	)
	type call struct {
		name string
		nr   uint32
		args []uint64
		want uint32
	}
	common := []call{
		{"getpid", unix.SYS_GETPID, nil, allow},
		{"openat", unix.SYS_OPENAT, []uint64{0xffffffffffffff9c, 0, unix.O_RDONLY}, allow},
		{"socket", unix.SYS_SOCKET, []uint64{unix.AF_INET, unix.SOCK_STREAM}, allow},
		{"clone fork", unix.SYS_CLONE, []uint64{uint64(unix.SIGCHLD)}, allow},
		{"clone thread", unix.SYS_CLONE, []uint64{unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_THREAD | unix.CLONE_SYSVSEM}, allow},
		{"clone CLONE_NEWNET", unix.SYS_CLONE, []uint64{unix.CLONE_NEWNET | uint64(unix.SIGCHLD)}, eperm},
		{"clone CLONE_NEWTIME", unix.SYS_CLONE, []uint64{unix.CLONE_NEWTIME}, eperm},
		{"unshare CLONE_FILES", unix.SYS_UNSHARE, []uint64{unix.CLONE_FILES}, allow},
		{"unshare CLONE_NEWUSER", unix.SYS_UNSHARE, []uint64{unix.CLONE_NEWUSER}, eperm},
		{"unshare CLONE_NEWNS with others", unix.SYS_UNSHARE, []uint64{unix.CLONE_NEWNS | unix.CLONE_FILES | 1<<40}, eperm},
		{"unshare CLONE_NEWCGROUP", unix.SYS_UNSHARE, []uint64{unix.CLONE_NEWCGROUP}, eperm},
		{"clone3", unix.SYS_CLONE3, nil, nosys},
		{"another ABI", unix.SYS_GETPID, nil, kill},
	}
	if runtime.GOARCH == "amd64" {
		common = append(common,
			call{"x32 mount", x32Bit | unix.SYS_MOUNT, nil, nosys},
			call{"x32 getpid", x32Bit | unix.SYS_GETPID, nil, nosys})
	}
	for _, noSysVShm := range []bool{false, true} {
		prog, err := assembleFilter(noSysVShm)
		if err != nil {
			t.Fatal(err)
		}
		calls := append([]call(nil), common...)
		shm := allow
		if noSysVShm {
			shm = eperm
		}
		calls = append(calls, call{"shmget", unix.SYS_SHMGET, nil, shm})
		denied := 0
		for _, name := range sandbox.DeniedSyscalls {
			nr, ok := syscallNumbers[name]
			if !ok {
				nr, ok = archSyscalls[name]
			}
			if ok {
				calls = append(calls, call{name, nr, nil, eperm})
				denied++
			}
		}
		if denied+len(archAbsent) != len(sandbox.DeniedSyscalls) {
			t.Errorf("%d of %d denied syscalls have a number on %s and %d are declared absent", denied, len(sandbox.DeniedSyscalls), runtime.GOARCH, len(archAbsent))
		}
		for _, c := range calls {
			a := arch
			if c.name == "another ABI" {
				a = unix.AUDIT_ARCH_I386
			}
			if got := runFilter(t, prog, a, c.nr, c.args...); got != c.want {
				t.Errorf("noSysVShm=%v: %s (nr %d, args %v) = %#x, want %#x", noSysVShm, c.name, c.nr, c.args, got, c.want)
			}
		}
	}
}

// A name added to sandbox.DeniedSyscalls without its number here would
// be let through: the filter is not built at all.
func TestFilterRefusesAnUnnumberedDeniedSyscall(t *testing.T) {
	saved := sandbox.DeniedSyscalls
	t.Cleanup(func() { sandbox.DeniedSyscalls = saved })
	sandbox.DeniedSyscalls = append(append([]string(nil), saved...), "no_such_call")
	if _, err := assembleFilter(false); err == nil {
		t.Fatal("assembleFilter with a denied syscall it has no number for succeeded")
	} else if want := fmt.Sprintf("no_such_call on %s", runtime.GOARCH); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name %q", err, want)
	}
}
