package pid1

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/sandbox"
)

// The test binary plays three parts: the test itself; the init (the
// client's peer), when _DSH_PID1_SERVE=1; and small programs run inside
// the init, when _DSH_PID1_HELPER names one.
func TestMain(m *testing.M) {
	if os.Getenv("_DSH_PID1_SERVE") == "1" {
		os.Exit(serveForTest())
	}
	if h := os.Getenv("_DSH_PID1_HELPER"); h != "" {
		os.Exit(runHelper(h, os.Args[1:]))
	}
	os.Exit(m.Run())
}

func runHelper(name string, args []string) int {
	switch name {
	case "exit": // exit CODE
		n, _ := strconv.Atoi(args[0])
		return n
	case "emit": // emit SEED NOUT NERR: deterministic binary data on both streams
		seed, _ := strconv.ParseUint(args[0], 10, 64)
		nout, _ := strconv.Atoi(args[1])
		nerr, _ := strconv.Atoi(args[2])
		out, errb := pattern(seed, nout), pattern(seed+1, nerr)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { os.Stdout.Write(out); wg.Done() }()
		go func() { os.Stderr.Write(errb); wg.Done() }()
		wg.Wait()
		return 0
	case "blast": // blast N: N bytes to stdout, cheaply
		n, _ := strconv.Atoi(args[0])
		chunk := pattern(1, 64<<10)
		for n > 0 {
			k := min(n, len(chunk))
			if _, err := os.Stdout.Write(chunk[:k]); err != nil {
				return 1
			}
			n -= k
		}
		return 0
	case "argv": // print the arguments and $X, NUL-separated
		os.Stdout.WriteString(strings.Join(append(args, os.Getenv("X")), "\x00"))
		return 0
	case "cat":
		io.Copy(os.Stdout, os.Stdin)
		return 0
	case "pwdenv":
		wd, _ := os.Getwd()
		fmt.Println(wd)
		for _, kv := range os.Environ() {
			fmt.Println(kv)
		}
		return 0
	case "escape":
		// Start a grandchild in a new session (outside our process
		// group), print its pid, keep stdout open, and sleep.
		cmd := exec.Command(os.Args[0])
		cmd.Env = []string{"_DSH_PID1_HELPER=sleep"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println(cmd.Process.Pid)
		time.Sleep(time.Hour)
		return 0
	case "sleep":
		time.Sleep(time.Hour)
		return 0
	case "siginit":
		return signalInitHelper(args)
	}
	fmt.Fprintln(os.Stderr, "unknown helper", name)
	return 2
}

// pattern returns n deterministic bytes covering every byte value.
func pattern(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// helper returns a spec running the test binary as the named helper.
func helper(name string, args ...string) sandbox.ProcessSpec {
	exe, _ := os.Executable()
	return sandbox.ProcessSpec{
		Argv: append([]string{exe}, args...),
		Env:  []string{"_DSH_PID1_HELPER=" + name},
	}
}

// shell returns a spec running script with /bin/sh.
func shell(script string) sandbox.ProcessSpec {
	return sandbox.ProcessSpec{
		Argv: []string{"sh", "-c", script},
		Env:  []string{"PATH=/usr/bin:/bin"},
	}
}

// initProc is an init started by a test, as a child of the test process.
type initProc struct {
	client *Client
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	waited chan struct{}
	err    error
}

// directStdio makes startInit connect the init with direct stdio
// (NewDirectClient), as the native driver does; see withDirectStdio.
var directStdio bool

// withDirectStdio runs test with direct stdio.
func withDirectStdio(test func(*testing.T)) func(*testing.T) {
	return func(t *testing.T) {
		directStdio = true
		t.Cleanup(func() { directStdio = false })
		test(t)
	}
}

// stdioPair makes a stdio socket: the client's end and the init's.
func stdioPair(t testing.TB) (*net.UnixConn, *os.File) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fds[0]), "stdio")
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		t.Fatal(err)
	}
	return c.(*net.UnixConn), os.NewFile(uintptr(fds[1]), "stdio (init)")
}

// serveForTest is Main, with the stdio socket _DSH_PID1_STDIO names.
func serveForTest() int {
	cfg, err := configFromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if s := os.Getenv("_DSH_PID1_STDIO"); s != "" {
		fd, _ := strconv.Atoi(s)
		f := os.NewFile(uintptr(fd), "stdio")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			fmt.Fprintln(os.Stderr, "stdio socket:", err)
			return 1
		}
		cfg.Stdio = c.(*net.UnixConn)
	}
	return Run(cfg)
}

// startInit runs the test binary as the init, connected to a Client over
// its stdin and stdout pipes. sys, if not nil, sets the init's process
// attributes (namespaces).
func startInit(t testing.TB, sys *syscall.SysProcAttr) *initProc {
	t.Helper()
	return startInitCmd(t, func(cmd *exec.Cmd) { cmd.SysProcAttr = sys })
}

// startInitCmd is startInit with a hook to adjust the init's command.
func startInitCmd(t testing.TB, adjust func(*exec.Cmd)) *initProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "_DSH_PID1_SERVE=1")
	adjust(cmd)
	var stdio *net.UnixConn
	if directStdio {
		// The init's end of the stdio socket after whatever adjust
		// passes; serveForTest finds it by the number in the variable.
		var child *os.File
		stdio, child = stdioPair(t)
		defer child.Close()
		cmd.ExtraFiles = append(cmd.ExtraFiles, child)
		cmd.Env = append(cmd.Env, "_DSH_PID1_STDIO="+strconv.Itoa(2+len(cmd.ExtraFiles)))
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	ip := &initProc{cmd: cmd, stderr: &bytes.Buffer{}, waited: make(chan struct{})}
	cmd.Stderr = &lockedWriter{w: ip.stderr}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the init: %v", err)
	}
	if stdio != nil {
		ip.client, err = NewDirectClient(JoinConn(out, in), stdio)
	} else {
		ip.client, err = NewClient(JoinConn(out, in))
	}
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		ip.err = cmd.Wait()
		close(ip.waited)
	}()
	t.Cleanup(func() {
		ip.client.Close()
		select {
		case <-ip.waited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Errorf("the init did not exit after the client closed")
		}
		if ip.err != nil {
			t.Errorf("init exited with %v; stderr:\n%s", ip.err, ip.stderr)
		}
	})
	return ip
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// run starts spec, reads stdout and stderr to their ends, and waits.
func run(t testing.TB, c *Client, spec sandbox.ProcessSpec) (stdout, stderr []byte, st sandbox.ExitStatus) {
	t.Helper()
	p, err := c.Start(context.Background(), spec)
	if err != nil {
		t.Fatalf("Start(%q): %v", spec.Argv, err)
	}
	return collect(t, p)
}

func collect(t testing.TB, p sandbox.Process) (stdout, stderr []byte, st sandbox.ExitStatus) {
	t.Helper()
	var wg sync.WaitGroup
	var errOut, errErr error
	wg.Add(2)
	go func() { stdout, errOut = io.ReadAll(p.Stdout()); wg.Done() }()
	go func() { stderr, errErr = io.ReadAll(p.Stderr()); wg.Done() }()
	wg.Wait()
	if errOut != nil || errErr != nil {
		t.Fatalf("reading output: stdout: %v, stderr: %v", errOut, errErr)
	}
	st, err := p.Wait()
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	return stdout, stderr, st
}

// procAlive reports whether pid exists, started at startTime, and is not a
// zombie.
func procAlive(pid int, startTime string) bool {
	st, state, ok := procStat(pid)
	return ok && st == startTime && state != "Z" && state != "X"
}

// procStat returns the start time and state of pid from /proc.
func procStat(pid int) (startTime, state string, ok bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return "", "", false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+2:]) // f[0] is field 3 (state)
	return f[19], f[0], true     // field 22 is starttime
}

// ppid returns the parent of pid from /proc.
func ppid(pid int) int {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return -1
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	n, _ := strconv.Atoi(f[1])
	return n
}

// eventually polls cond until it holds, failing t after a generous
// deadline. It waits for an outcome; it does not measure speed.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

// startReportingPid starts spec, whose first line of output is the pid of
// a process it started, and returns the process and that pid.
func startReportingPid(t *testing.T, c *Client, spec sandbox.ProcessSpec) (sandbox.Process, int) {
	t.Helper()
	p, err := c.Start(ctx(t), spec)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(p.Stdout()).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Sscan(line, &pid); err != nil {
		t.Fatalf("first line %q is not a pid: %v", line, err)
	}
	return p, pid
}
