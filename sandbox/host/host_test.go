package host_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/sandbox"
	"github.com/dsh-dev/dsh/sandbox/host"
)

func open(t *testing.T, spec *sandbox.Spec) sandbox.Instance {
	t.Helper()
	return openWith(t, spec, nil)
}

func openWith(t *testing.T, spec *sandbox.Spec, opts *sandbox.OpenOptions) sandbox.Instance {
	t.Helper()
	if spec == nil {
		spec = sandbox.DefaultSpec(t.TempDir())
	}
	in, err := host.New().Open(context.Background(), spec, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	return in
}

func output(t *testing.T, p sandbox.Process) (string, sandbox.ExitStatus) {
	t.Helper()
	b, err := io.ReadAll(p.Stdout())
	if err != nil {
		t.Fatal(err)
	}
	st, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	return string(b), st
}

func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return !(i > 0 && len(s) > i+2 && s[i+2] == 'Z')
}

func TestEnvironmentIsExactlyTheGivenOne(t *testing.T) {
	t.Setenv("DSH_HOST_TEST_LEAK", "leaked")
	in := open(t, nil)
	p, err := in.Start(context.Background(), sandbox.ProcessSpec{Argv: []string{"env"}, Env: []string{"PATH=/usr/bin:/bin", "ONLY=me"}})
	if err != nil {
		t.Fatal(err)
	}
	out, st := output(t, p)
	if out != "PATH=/usr/bin:/bin\nONLY=me\n" || st.Code != 0 {
		t.Fatalf("env = %q (%v); want exactly the given entries", out, st)
	}
}

func TestLookPathUsesTheProcessPATH(t *testing.T) {
	ws := t.TempDir()
	bin := filepath.Join(ws, "bin")
	os.Mkdir(bin, 0o755)
	os.WriteFile(filepath.Join(bin, "hello-dsh"), []byte("#!/bin/sh\necho from-ws-bin\n"), 0o755)
	os.WriteFile(filepath.Join(ws, "plain"), []byte("#!/bin/sh\n"), 0o644)
	in := open(t, sandbox.DefaultSpec(ws))
	p, err := in.Start(context.Background(), sandbox.ProcessSpec{Argv: []string{"hello-dsh"}, Env: []string{"PATH=" + bin + ":/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := output(t, p); out != "from-ws-bin\n" {
		t.Fatalf("output %q", out)
	}
	// dsh's own PATH is not consulted.
	if _, err := in.Start(context.Background(), sandbox.ProcessSpec{Argv: []string{"sh"}, Env: []string{"PATH=" + bin}}); !errors.Is(err, sandbox.ErrNotFound) {
		t.Fatalf("sh with a PATH lacking it: %v; want sandbox.ErrNotFound", err)
	}
	if _, err := in.Start(context.Background(), sandbox.ProcessSpec{Argv: []string{"./plain"}, Dir: ws}); !errors.Is(err, sandbox.ErrNotExecutable) {
		t.Fatalf("non-executable file: %v; want sandbox.ErrNotExecutable", err)
	}
	if _, err := in.Start(context.Background(), sandbox.ProcessSpec{Argv: []string{"./missing"}, Dir: ws}); !errors.Is(err, sandbox.ErrNotFound) {
		t.Fatalf("missing file: %v; want sandbox.ErrNotFound", err)
	}
}

func TestSignalReachesTheWholeGroup(t *testing.T) {
	in := open(t, nil)
	p, err := in.Start(context.Background(), sandbox.ProcessSpec{
		Argv: []string{"/bin/sh", "-c", "sleep 300 & echo $!; wait"},
		Env:  []string{"PATH=/usr/bin:/bin"},
	})
	if err != nil {
		t.Fatal(err)
	}
	line := make([]byte, 32)
	n, _ := p.Stdout().Read(line)
	child, err := strconv.Atoi(strings.TrimSpace(string(line[:n])))
	if err != nil {
		t.Fatalf("child pid %q: %v", line[:n], err)
	}
	if err := p.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	st, _ := p.Wait()
	if st.Signal != syscall.SIGKILL {
		t.Fatalf("leader status %v; want SIGKILL", st)
	}
	waitDead(t, child)
	// Signalling an empty group is not an error.
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("Signal after exit = %v", err)
	}
}

func waitDead(t *testing.T, pid int) {
	t.Helper()
	for range 500 {
		if !alive(pid) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	t.Fatalf("process %d survived", pid)
}

func TestCloseKillsProcessGroups(t *testing.T) {
	in, err := host.New().Open(context.Background(), sandbox.DefaultSpec(t.TempDir()), nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := in.Start(context.Background(), sandbox.ProcessSpec{
		Argv: []string{"/bin/sh", "-c", "sleep 300 & echo $!; exec sleep 301"},
		Env:  []string{"PATH=/usr/bin:/bin"},
	})
	if err != nil {
		t.Fatal(err)
	}
	line := make([]byte, 32)
	n, _ := p.Stdout().Read(line)
	child, _ := strconv.Atoi(strings.TrimSpace(string(line[:n])))
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	if st, _ := p.Wait(); st.Signal != syscall.SIGKILL {
		t.Fatalf("after Close the leader ended with %v; want SIGKILL", st)
	}
	waitDead(t, child)
	if err := in.Close(); !errors.Is(err, host.ErrClosed) {
		t.Fatalf("second Close = %v; want ErrClosed", err)
	}
	if _, err := in.Start(context.Background(), sandbox.ProcessSpec{Argv: []string{"/bin/true"}}); !errors.Is(err, host.ErrClosed) {
		t.Fatalf("Start after Close = %v; want ErrClosed", err)
	}
}

// echoServer is a stand-in EgressServer: it answers every connection
// with a fixed line, so the test sees that the proxy address works.
type echoServer struct{}

func (echoServer) Serve(l net.Listener) error {
	for {
		c, err := l.Accept()
		if err != nil {
			return err
		}
		c.Write([]byte("egress\n"))
		c.Close()
	}
}

func TestEgressIsServedAndAdvertised(t *testing.T) {
	spec := sandbox.DefaultSpec(t.TempDir())
	spec.Egress = true
	in := openWith(t, spec, &sandbox.OpenOptions{Egress: echoServer{}})
	addr := in.(sandbox.ProxyAddresser).ProxyAddr()
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("ProxyAddr = %q, want a loopback address", addr)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(c)
	c.Close()
	if string(b) != "egress\n" {
		t.Fatalf("the advertised proxy answered %q", b)
	}
	in.Close()
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Fatal("the egress listener outlived Close")
	}
}

func TestStdinPipe(t *testing.T) {
	in := open(t, nil)
	p, err := in.Start(context.Background(), sandbox.ProcessSpec{Argv: []string{"/bin/cat"}, Stdin: true})
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(p.Stdin(), "through stdin")
	p.Stdin().Close()
	if out, st := output(t, p); out != "through stdin" || st.Code != 0 {
		t.Fatalf("cat = %q, %v", out, st)
	}
	q, _ := in.Start(context.Background(), sandbox.ProcessSpec{Argv: []string{"/bin/cat"}})
	if q.Stdin() != nil {
		t.Fatal("a process without Stdin got a stdin pipe")
	}
	if out, _ := output(t, q); out != "" {
		t.Fatalf("cat of /dev/null = %q", out)
	}
}
