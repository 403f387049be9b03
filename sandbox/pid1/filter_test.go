package pid1

import (
	"runtime"
	"testing"

	"github.com/dsh-dev/dsh/internal/seccomptest"
	"golang.org/x/sys/unix"
)

// seccompData is struct seccomp_data for nr and args on this
// architecture (seccomptest.Data).
func seccompData(nr uint32, args ...uint64) []byte {
	return seccomptest.Data(auditArch[runtime.GOARCH], nr, args...)
}

// TestWorldFilter runs the assembled filter in the BPF interpreter on the
// calls it must refuse and on neighbours it must let through.
func TestWorldFilter(t *testing.T) {
	eperm := retErrno(unix.EPERM)
	cases := []struct {
		name string
		nr   uint32
		args []uint64
		want uint32 // with unix sockets refused
		unix uint32 // with Spec.UnixSockets
	}{
		{"socket inet", unix.SYS_SOCKET, []uint64{unix.AF_INET, unix.SOCK_STREAM}, retAllow, retAllow},
		{"socket inet6", unix.SYS_SOCKET, []uint64{unix.AF_INET6, unix.SOCK_DGRAM}, retAllow, retAllow},
		{"socket unix", unix.SYS_SOCKET, []uint64{unix.AF_UNIX, unix.SOCK_STREAM}, eperm, retAllow},
		{"socket unix, high bits set", unix.SYS_SOCKET, []uint64{1<<32 | unix.AF_UNIX, unix.SOCK_STREAM}, eperm, retAllow},
		{"socket vsock", unix.SYS_SOCKET, []uint64{unix.AF_VSOCK, unix.SOCK_STREAM}, retErrno(unix.EAFNOSUPPORT), retErrno(unix.EAFNOSUPPORT)},
		{"socket packet", unix.SYS_SOCKET, []uint64{unix.AF_PACKET, unix.SOCK_RAW}, retErrno(unix.EAFNOSUPPORT), retErrno(unix.EAFNOSUPPORT)},
		{"netlink route", unix.SYS_SOCKET, []uint64{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE}, retAllow, retAllow},
		{"netlink uevent", unix.SYS_SOCKET, []uint64{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_KOBJECT_UEVENT}, retErrno(unix.EPROTONOSUPPORT), retErrno(unix.EPROTONOSUPPORT)},
		{"socketpair stream", unix.SYS_SOCKETPAIR, []uint64{unix.AF_UNIX, unix.SOCK_STREAM | unix.SOCK_CLOEXEC}, retAllow, retAllow},
		{"socketpair seqpacket", unix.SYS_SOCKETPAIR, []uint64{unix.AF_UNIX, unix.SOCK_SEQPACKET}, retAllow, retAllow},
		{"socketpair dgram", unix.SYS_SOCKETPAIR, []uint64{unix.AF_UNIX, unix.SOCK_DGRAM | unix.SOCK_NONBLOCK}, eperm, retAllow},
		{"ioctl TIOCSTI", unix.SYS_IOCTL, []uint64{0, unix.TIOCSTI}, eperm, eperm},
		{"ioctl TIOCSTI, high bits set", unix.SYS_IOCTL, []uint64{0, 0xffffffff<<32 | unix.TIOCSTI}, eperm, eperm},
		{"ioctl TIOCLINUX", unix.SYS_IOCTL, []uint64{0, unix.TIOCLINUX}, eperm, eperm},
		{"ioctl FIOSETOWN", unix.SYS_IOCTL, []uint64{0, fioSetOwn}, eperm, eperm},
		{"ioctl TIOCGWINSZ", unix.SYS_IOCTL, []uint64{0, unix.TIOCGWINSZ}, retAllow, retAllow},
		{"rt_sigqueueinfo to 1", unix.SYS_RT_SIGQUEUEINFO, []uint64{1, 11, 0}, eperm, eperm},
		{"rt_sigqueueinfo to 2", unix.SYS_RT_SIGQUEUEINFO, []uint64{2, 11, 0}, retAllow, retAllow},
		{"rt_tgsigqueueinfo to 1", unix.SYS_RT_TGSIGQUEUEINFO, []uint64{1, 5, 11, 0}, eperm, eperm},
		{"pidfd_send_signal with siginfo", unix.SYS_PIDFD_SEND_SIGNAL, []uint64{3, 11, 1 << 40}, eperm, eperm},
		{"pidfd_send_signal without", unix.SYS_PIDFD_SEND_SIGNAL, []uint64{3, 15, 0}, retAllow, retAllow},
		{"F_SETOWN 1", unix.SYS_FCNTL, []uint64{3, unix.F_SETOWN, 1}, eperm, eperm},
		{"F_SETOWN -1", unix.SYS_FCNTL, []uint64{3, unix.F_SETOWN, 0xffffffffffffffff}, eperm, eperm},
		{"F_SETOWN 7", unix.SYS_FCNTL, []uint64{3, unix.F_SETOWN, 7}, retAllow, retAllow},
		{"F_SETOWN_EX", unix.SYS_FCNTL, []uint64{3, unix.F_SETOWN_EX, 1 << 40}, eperm, eperm},
		{"F_SETFL", unix.SYS_FCNTL, []uint64{3, unix.F_SETFL, 1}, retAllow, retAllow},
		{"clone CLONE_PARENT", unix.SYS_CLONE, []uint64{unix.CLONE_PARENT | 11}, eperm, eperm},
		{"clone fork", unix.SYS_CLONE, []uint64{17}, retAllow, retAllow},
		{"clone3", unix.SYS_CLONE3, nil, retErrno(unix.ENOSYS), retErrno(unix.ENOSYS)},
		{"io_uring_setup", unix.SYS_IO_URING_SETUP, nil, eperm, eperm},
		{"x32 socket", x32Bit | unix.SYS_SOCKET, []uint64{unix.AF_UNIX}, retKill, retKill},
		{"getpid", unix.SYS_GETPID, nil, retAllow, retAllow},
	}
	for _, unixSockets := range []bool{false, true} {
		raw, err := worldFilter(unixSockets)
		if err != nil {
			t.Fatal(err)
		}
		vm := seccomptest.VM(t, raw)
		for _, c := range cases {
			want := c.want
			if unixSockets {
				want = c.unix
			}
			got, err := vm.Run(seccompData(c.nr, c.args...))
			if err != nil || uint32(got) != want {
				t.Errorf("unix sockets %v: %s: filter returns %#x, %v; want %#x", unixSockets, c.name, got, err, want)
			}
		}
		// Another architecture's calls are killed.
		other := seccomptest.Data(unix.AUDIT_ARCH_I386, unix.SYS_GETPID)
		if got, _ := vm.Run(other); uint32(got) != retKill {
			t.Errorf("a call of another architecture: %#x, want kill", got)
		}
	}
}
