// Command probe is the conformance suite's agent inside a sandbox: a
// static binary copied into the world's workspace that attempts one
// forbidden thing per subcommand and prints what happened, one line per
// attempt. It never decides pass or fail; the suite does.
package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: probe SUBCOMMAND ARGS...")
		os.Exit(2)
	}
	args := os.Args[2:]
	switch os.Args[1] {
	case "dial":
		dial(args)
	case "resolve":
		resolve(args[0], args[1])
	case "http":
		get(args[0])
	case "write":
		write(args)
	case "secrets":
		secrets(args)
	case "status":
		status()
	case "mount":
		mount()
	case "unshare":
		unshareAll()
	case "ptrace":
		ptrace()
	case "procs":
		procs(args[0])
	case "kill":
		kill(args)
	case "sock":
		sock(args)
	case "listen":
		listen(args[0])
	case "emit":
		emit(args)
	case "connect":
		connect(args)
	case "terminal":
		terminal()
	case "unixdial":
		unixDial(args)
	case "unixself":
		unixSelf(args[0])
	case "sockscan":
		sockScan(args)
	case "families":
		families()
	case "meta":
		meta(args)
	case "sleep":
		time.Sleep(time.Hour)
	case "forgeinit":
		forgeinit()
	case "siginit":
		siginit()
	case "serve", "fetch":
		proxyenv(os.Args[1], args)
	case "mountflags":
		mountFlags(args[0], args[1])
	case "fill":
		n, _ := strconv.ParseInt(args[0], 10, 64)
		fill(n, args[1:])
	case "protect":
		protect(args)
	case "gitwrites":
		gitwrites()
	case "setuid":
		setuid(args[0])
	case "whoami":
		whoami()
	case "wsedit":
		wsEdit(args[0])
	case "wswrite":
		wsWrite(args[0])
	default:
		fmt.Fprintln(os.Stderr, "probe: unknown subcommand", os.Args[1])
		os.Exit(2)
	}
}

// dial connects to each address; a connection reads the listener's token.
func dial(addrs []string) {
	for _, a := range addrs {
		c, err := net.DialTimeout("tcp", a, 3*time.Second)
		if err != nil {
			fmt.Printf("refused %s %v\n", a, oneLine(err))
			continue
		}
		c.SetReadDeadline(time.Now().Add(3 * time.Second))
		b := make([]byte, 64)
		n, _ := io.ReadFull(c, b[:32])
		c.Close()
		fmt.Printf("connected %s %q\n", a, b[:n])
	}
}

// resolve asks the DNS server at server (host:port, a listener of the
// suite) for name.
func resolve(server, name string) {
	r := &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "udp", server)
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	addrs, err := r.LookupHost(ctx, name)
	if err != nil {
		fmt.Printf("failed %v\n", oneLine(err))
		return
	}
	fmt.Printf("resolved %v\n", addrs)
}

// get fetches target through the proxy named by HTTP_PROXY. The proxy is
// used explicitly: net/http would bypass it for loopback targets.
func get(target string) {
	p := os.Getenv("HTTP_PROXY")
	if p == "" {
		p = os.Getenv("http_proxy")
	}
	if p == "" {
		fmt.Println("noproxy HTTP_PROXY is not set")
		return
	}
	pu, err := url.Parse(p)
	if err != nil {
		fmt.Printf("noproxy %q: %v\n", p, err)
		return
	}
	getVia(target, pu)
}

// write tests whether each directory takes a new file. It uses an
// unnamed O_TMPFILE file, so nothing can be left behind even if the probe
// is killed; filesystems without O_TMPFILE get a named file removed at
// once.
func write(dirs []string) {
	for _, d := range dirs {
		fd, err := unix.Open(d, unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
		if err == nil {
			unix.Close(fd)
			fmt.Printf("wrote %s\n", d)
			continue
		}
		if err != unix.EOPNOTSUPP && err != unix.EISDIR && err != unix.EINVAL {
			fmt.Printf("denied %s %v\n", d, oneLine(err))
			continue
		}
		p := filepath.Join(d, fmt.Sprintf(".dsh-probe-%d", os.Getpid()))
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			fmt.Printf("denied %s %v\n", d, oneLine(err))
			continue
		}
		f.Close()
		os.Remove(p)
		fmt.Printf("wrote %s\n", d)
	}
}

// secrets reports regular files under the paths that can be read. The
// walk is bounded: on a host without masks these trees can be large.
func secrets(paths []string) {
	for _, root := range paths {
		visited, readable := 0, 0
		filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
			visited++
			if visited > 2000 || readable >= 10 {
				return filepath.SkipAll
			}
			if err != nil || !fi.Mode().IsRegular() {
				return nil
			}
			f, err := os.Open(p)
			if err != nil {
				return nil
			}
			defer f.Close()
			b := make([]byte, 64)
			n, err := f.Read(b)
			if err != nil && n == 0 && fi.Size() > 0 {
				return nil
			}
			readable++
			fmt.Printf("readable %s %q\n", p, b[:n])
			return nil
		})
	}
	fmt.Println("done")
}

func status() {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		fmt.Printf("error %v\n", err)
		return
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "Cap") || strings.HasPrefix(l, "NoNewPrivs") || strings.HasPrefix(l, "Seccomp:") {
			fmt.Println(strings.Join(strings.Fields(l), " "))
		}
	}
}

func mount() {
	dir, err := os.MkdirTemp("/tmp", "dsh-probe-mnt-")
	if err != nil {
		fmt.Printf("setup-failed %v\n", err)
		return
	}
	defer os.Remove(dir)
	if err := unix.Mount("none", dir, "tmpfs", 0, "size=1m"); err != nil {
		fmt.Printf("denied mount %v\n", err)
	} else {
		unix.Unmount(dir, unix.MNT_DETACH)
		fmt.Println("allowed mount")
	}
	if err := unix.Mount("/", dir, "", unix.MS_BIND, ""); err != nil {
		fmt.Printf("denied bind %v\n", err)
	} else {
		unix.Unmount(dir, unix.MNT_DETACH)
		fmt.Println("allowed bind")
	}
}

// unshareAll tries each namespace in a fresh child (clone flags), since a
// multithreaded Go process can never unshare a user namespace itself.
func unshareAll() {
	flags := []struct {
		name string
		flag uintptr
	}{
		{"user", unix.CLONE_NEWUSER},
		{"user+mount", unix.CLONE_NEWUSER | unix.CLONE_NEWNS},
		{"mount", unix.CLONE_NEWNS},
		{"net", unix.CLONE_NEWNET},
		{"pid", unix.CLONE_NEWPID},
		{"uts", unix.CLONE_NEWUTS},
		{"ipc", unix.CLONE_NEWIPC},
		{"cgroup", unix.CLONE_NEWCGROUP},
	}
	self, _ := os.Executable()
	for _, f := range flags {
		cmd := exec.Command(self, "emit", "0")
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: f.flag}
		if err := cmd.Run(); err != nil {
			fmt.Printf("denied %s %v\n", f.name, oneLine(err))
		} else {
			fmt.Printf("allowed %s\n", f.name)
		}
	}
	// The syscall itself, for the namespaces a threaded process may enter.
	runtime.LockOSThread()
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		fmt.Printf("denied unshare(2) mount %v\n", err)
	} else {
		fmt.Println("allowed unshare(2) mount")
	}
}

// ptrace attaches to a child of its own: same user, a descendant, so only
// a syscall filter or missing capability stops it.
func ptrace() {
	self, _ := os.Executable()
	child := exec.Command(self, "sleep")
	if err := child.Start(); err != nil {
		fmt.Printf("setup-failed %v\n", err)
		return
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pid := child.Process.Pid
	if err := unix.PtraceAttach(pid); err != nil {
		fmt.Printf("denied attach %v\n", err)
		return
	}
	var ws unix.WaitStatus
	unix.Wait4(pid, &ws, unix.WALL, nil)
	unix.PtraceDetach(pid)
	fmt.Println("allowed attach")
}

// procs lists processes whose command line holds marker.
func procs(marker string) {
	ents, _ := os.ReadDir("/proc")
	found := false
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		line := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
		if err != nil || !strings.Contains(line, marker) {
			continue
		}
		if e.Name() == strconv.Itoa(os.Getpid()) {
			continue
		}
		found = true
		fmt.Printf("found %s %q\n", e.Name(), line)
	}
	if !found {
		fmt.Println("none")
	}
}

func kill(pids []string) {
	for _, p := range pids {
		pid, _ := strconv.Atoi(p)
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			fmt.Printf("denied %d %v\n", pid, err)
		} else {
			fmt.Printf("sent %d\n", pid)
		}
	}
}

func sock(paths []string) {
	for _, p := range paths {
		c, err := net.DialTimeout("unix", p, 3*time.Second)
		if err != nil {
			fmt.Printf("absent %s %v\n", p, oneLine(err))
			continue
		}
		c.Close()
		fmt.Printf("connected %s\n", p)
	}
}

// listen serves token on a TCP port of every interface and prints the
// addresses another world would try, then "ready".
func listen(token string) {
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		fmt.Printf("setup-failed %v\n", err)
		os.Exit(1)
	}
	port := l.Addr().(*net.TCPAddr).Port
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
			fmt.Printf("listening %s\n", net.JoinHostPort(ipn.IP.String(), strconv.Itoa(port)))
		}
	}
	fmt.Println("ready")
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		c.Write([]byte(token))
		c.Close()
	}
}

// emit writes n bytes of a fixed pattern to stdout (and, with a second
// argument, m bytes to stderr).
func emit(args []string) {
	out := bufio.NewWriter(os.Stdout)
	n, _ := strconv.Atoi(args[0])
	for i := 0; i < n; i++ {
		out.WriteByte(Pattern(i))
	}
	out.Flush()
	if len(args) > 1 {
		m, _ := strconv.Atoi(args[1])
		errOut := bufio.NewWriter(os.Stderr)
		for i := 0; i < m; i++ {
			errOut.WriteByte(Pattern(i + 7))
		}
		errOut.Flush()
	}
}

// Pattern is byte i of emit's output: printable, period 61 (prime, so no
// buffer size lines up with it).
func Pattern(i int) byte { return byte('A' + i%61) }

func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", " ") }
