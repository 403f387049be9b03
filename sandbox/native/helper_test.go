package native

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
	"unsafe"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/dsh-dev/dsh/sandbox"
)

// testHelper is the test binary's helper mode. It prints one line per
// result and returns the exit status.
func testHelper(args []string) int {
	if len(args) == 0 {
		fmt.Println("helper: no command")
		return 2
	}
	switch args[0] {
	case "syscalls":
		for _, c := range syscallChecks() {
			fmt.Printf("%s %s\n", c.name, errnoName(c.try()))
		}
		return 0
	case "dial": // dial ADDR: try a direct TCP connection
		c, err := net.DialTimeout("tcp", args[1], 2*time.Second)
		if err != nil {
			fmt.Println("dial failed:", err)
			return 1
		}
		c.Close()
		fmt.Println("dial ok")
		return 0
	case "resolve": // resolve NAME: try name resolution
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		addrs, err := net.DefaultResolver.LookupHost(ctx, args[1])
		if err != nil {
			fmt.Println("resolve failed:", err)
			return 1
		}
		fmt.Println("resolved:", addrs)
		return 0
	case "get": // get URL: HTTP GET through the environment's proxy
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: http.ProxyFromEnvironment}}
		resp, err := c.Get(args[1])
		if err != nil {
			fmt.Println("get failed:", err)
			return 1
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		fmt.Printf("status %d body %q\n", resp.StatusCode, b)
		return 0
	case "unpriv": // unpriv WS: the unprivileged-user checks
		return unprivHelper(args[1])
	case "nouserns": // nouserns WS: forbid user namespaces here, then Open
		if err := os.WriteFile("/proc/sys/user/max_user_namespaces", []byte("0"), 0); err != nil {
			fmt.Println("setting max_user_namespaces:", err)
			return 1
		}
		spec := sandbox.DefaultSpec(args[1])
		spec.Resources = nil
		_, err := New(&Options{StateDir: args[2]}).Open(context.Background(), spec, nil)
		fmt.Printf("unavailable=%v\n%v\n", errors.Is(err, ErrUnavailable), err)
		r := New(&Options{StateDir: args[2]}).Inspect(context.Background())
		fmt.Printf("probe userns=%v ready=%v problems=%q\n", r.UserNamespaces, r.Ready(), r.Problems)
		return 0
	case "crash": // crash STATE WS: open a world on WS, start a sleeper, report, wait to be killed
		return crashHelper(args[1:])
	}
	fmt.Println("helper: unknown command", args[0])
	return 2
}

type syscallCheck struct {
	name string
	try  func() syscall.Errno
}

func raw(nr uintptr, a ...uintptr) syscall.Errno {
	var x [6]uintptr
	copy(x[:], a)
	_, _, e := unix.RawSyscall6(nr, x[0], x[1], x[2], x[3], x[4], x[5])
	return e
}

// syscallChecks try each syscall the filter must deny, with arguments
// that would otherwise fail differently (or, for clone, succeed).
func syscallChecks() []syscallCheck {
	p := func(s string) uintptr { b, _ := unix.BytePtrFromString(s); return uintptr(unsafe.Pointer(b)) }
	return []syscallCheck{
		{"mount", func() syscall.Errno { return raw(unix.SYS_MOUNT, p("none"), p("/tmp"), p("tmpfs"), 0, 0) }},
		{"umount2", func() syscall.Errno { return raw(unix.SYS_UMOUNT2, p("/tmp"), 0) }},
		{"pivot_root", func() syscall.Errno { return raw(unix.SYS_PIVOT_ROOT, p("/tmp"), p("/tmp")) }},
		{"unshare_user", func() syscall.Errno { return raw(unix.SYS_UNSHARE, unix.CLONE_NEWUSER) }},
		{"unshare_net", func() syscall.Errno { return raw(unix.SYS_UNSHARE, unix.CLONE_NEWNET) }},
		{"clone_user", func() syscall.Errno {
			r, _, e := unix.RawSyscall6(unix.SYS_CLONE, unix.CLONE_NEWUSER|uintptr(unix.SIGCHLD), 0, 0, 0, 0, 0)
			if e == 0 && r == 0 {
				unix.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0) // the child, had it been allowed
			}
			if e == 0 {
				var ws unix.WaitStatus
				unix.Wait4(int(r), &ws, 0, nil)
			}
			return e
		}},
		{"clone3", func() syscall.Errno { return raw(unix.SYS_CLONE3, 0, 0) }},
		{"setns", func() syscall.Errno { return raw(unix.SYS_SETNS, 0, 0) }},
		{"ptrace", func() syscall.Errno { return raw(unix.SYS_PTRACE, unix.PTRACE_ATTACH, 1) }},
		{"process_vm_readv", func() syscall.Errno { return raw(unix.SYS_PROCESS_VM_READV, 1, 0, 0, 0, 0, 0) }},
		{"process_vm_writev", func() syscall.Errno { return raw(unix.SYS_PROCESS_VM_WRITEV, 1, 0, 0, 0, 0, 0) }},
		{"kexec_load", func() syscall.Errno { return raw(unix.SYS_KEXEC_LOAD, 0, 0, 0, 0) }},
		{"kexec_file_load", func() syscall.Errno { return raw(unix.SYS_KEXEC_FILE_LOAD, 0, 0, 0, 0, 0) }},
		{"bpf", func() syscall.Errno { return raw(unix.SYS_BPF, 0, 0, 0) }},
		{"perf_event_open", func() syscall.Errno { return raw(unix.SYS_PERF_EVENT_OPEN, 0, 0, 0, 0, 0) }},
		{"keyctl", func() syscall.Errno { return raw(unix.SYS_KEYCTL, 0, 0) }},
		{"add_key", func() syscall.Errno { return raw(unix.SYS_ADD_KEY, 0, 0, 0, 0, 0) }},
		{"request_key", func() syscall.Errno { return raw(unix.SYS_REQUEST_KEY, 0, 0, 0, 0) }},
		{"io_uring_setup", func() syscall.Errno { return raw(unix.SYS_IO_URING_SETUP, 1, 0) }},
		{"io_uring_enter", func() syscall.Errno { return raw(unix.SYS_IO_URING_ENTER, 0, 0, 0, 0, 0, 0) }},
		{"io_uring_register", func() syscall.Errno { return raw(unix.SYS_IO_URING_REGISTER, 0, 0, 0, 0) }},
		{"open_by_handle_at", func() syscall.Errno { return raw(unix.SYS_OPEN_BY_HANDLE_AT, 0, 0, 0) }},
		{"init_module", func() syscall.Errno { return raw(unix.SYS_INIT_MODULE, 0, 0, 0) }},
		{"finit_module", func() syscall.Errno { return raw(unix.SYS_FINIT_MODULE, 0, 0, 0) }},
		{"delete_module", func() syscall.Errno { return raw(unix.SYS_DELETE_MODULE, 0, 0) }},
	}
}

func errnoName(e syscall.Errno) string {
	switch e {
	case 0:
		return "ALLOWED"
	case unix.EPERM:
		return "EPERM"
	case unix.ENOSYS:
		return "ENOSYS"
	}
	return fmt.Sprintf("errno%d", int(e))
}

// crashHelper opens a world in a state directory given as args[0],
// starts a long sleeper in it, prints "world <id>" and waits to be killed.
func crashHelper(args []string) int {
	d := New(&Options{StateDir: args[0]})
	spec := sandbox.DefaultSpec(args[1])
	in, err := d.Open(context.Background(), spec, nil)
	if err != nil {
		fmt.Println("open:", err)
		return 1
	}
	p, err := in.Start(context.Background(), sandbox.ProcessSpec{Argv: []string{"sleep", "1000"}, Env: spec.Env})
	if err != nil {
		fmt.Println("start:", err)
		return 1
	}
	go io.Copy(io.Discard, p.Stdout())
	go io.Copy(io.Discard, p.Stderr())
	fmt.Println("world", in.(*instance).l.id)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	<-sig
	return 0
}

var _ = strings.TrimSpace

type (
	specsMount  = specs.Mount
	specsRlimit = specs.POSIXRlimit
)

func sandboxMount(typ string) specsMount {
	return specsMount{Destination: "/mnt", Type: typ, Source: "x"}
}

func sandboxRlimit(typ string) specsRlimit { return specsRlimit{Type: typ, Hard: 1, Soft: 1} }

// withProxy is env with HTTP_PROXY at the init's relay, as execworld sets
// it (the driver sets no proxy variables).
func withProxy(env []string) []string {
	return append(slices.Clone(env), "HTTP_PROXY=http://"+sandbox.ProxyAddr)
}
