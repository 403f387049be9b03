package docker

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/dsh-dev/dsh/sandbox"
)

// openWorld opens a world of image with dsh's real init, closed (and
// checked for leftovers) when the test ends.
func openWorld(t *testing.T, image string, modify func(*sandbox.Spec)) *world {
	t.Helper()
	return openWorldWith(t, image, modify, nil)
}

// openEgressWorld opens a world of image whose egress srv serves.
func openEgressWorld(t *testing.T, image string, srv sandbox.EgressServer) *world {
	t.Helper()
	return openWorldWith(t, image, func(s *sandbox.Spec) { s.Egress = true }, &sandbox.OpenOptions{Egress: srv})
}

func openWorldWith(t *testing.T, image string, modify func(*sandbox.Spec), opts *sandbox.OpenOptions) *world {
	t.Helper()
	cli := newClient(t)
	requireImage(t, cli, image)
	d, err := New(&Options{InitPath: initBinary(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	spec := sandbox.DefaultSpec(workspace(t))
	spec.Image = image
	if modify != nil {
		modify(spec)
	}
	inst, err := d.Open(deadline(t), spec, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	w := inst.(*world)
	cleanupWorld(t, cli, w)
	return w
}

// run runs argv in the world and returns its output and status.
func run(t *testing.T, inst sandbox.Instance, stdin string, argv ...string) (stdout, stderr string, st sandbox.ExitStatus) {
	t.Helper()
	p, err := inst.Start(deadline(t), sandbox.ProcessSpec{Argv: argv, Stdin: stdin != ""})
	if err != nil {
		t.Fatalf("Start(%q): %v", argv, err)
	}
	var wg sync.WaitGroup
	var out, errb bytes.Buffer
	wg.Add(2)
	go func() { defer wg.Done(); io.Copy(&out, p.Stdout()) }()
	go func() { defer wg.Done(); io.Copy(&errb, p.Stderr()) }()
	if stdin != "" {
		io.WriteString(p.Stdin(), stdin)
		p.Stdin().Close()
	}
	wg.Wait()
	st, err = p.Wait()
	if err != nil {
		t.Fatalf("Wait(%q): %v", argv, err)
	}
	return out.String(), errb.String(), st
}

func TestExecRoundTrip(t *testing.T) {
	w := openWorld(t, baseImage, nil)
	out, errOut, st := run(t, w, "hello from stdin\n", "bash", "-c", `cat; echo "to stderr" >&2; pwd; exit 7`)
	if want := "hello from stdin\n" + w.workspace + "\n"; out != want {
		t.Errorf("stdout = %q, want %q", out, want)
	}
	if errOut != "to stderr\n" {
		t.Errorf("stderr = %q, want %q", errOut, "to stderr\n")
	}
	if st.Code != 7 || st.Signal != 0 {
		t.Errorf("status = %v, want exit status 7", st)
	}
}

func TestConfinementIdentity(t *testing.T) {
	w := openWorld(t, baseImage, nil)
	out, _, st := run(t, w, "", "bash", "-c", "id -u; id -un; grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status")
	if st.Code != 0 {
		t.Fatalf("status = %v; output %q", st, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	fields := map[string]string{}
	for _, l := range lines[2:] {
		k, v, _ := strings.Cut(l, ":")
		fields[k] = strings.TrimSpace(v)
	}
	if lines[0] == "0" || lines[1] != "dsh" {
		t.Errorf("user = %s (%s), want the image's non-root user dsh", lines[1], lines[0])
	}
	for k, want := range map[string]string{"CapEff": "0000000000000000", "CapPrm": "0000000000000000", "CapBnd": "0000000000000000", "NoNewPrivs": "1", "Seccomp": "2"} {
		if fields[k] != want {
			t.Errorf("%s = %q, want %q", k, fields[k], want)
		}
	}
}

func TestReadOnlyRootWritableWorkspaceAndTmp(t *testing.T) {
	w := openWorld(t, baseImage, nil)
	out, _, _ := run(t, w, "", "bash", "-c",
		`touch /etc/x 2>/dev/null; echo "root:$?"; touch /tmp/x; echo "tmp:$?"; touch ./x; echo "ws:$?"; test -e /var/run/docker.sock; echo "sock:$?"`)
	if want := "root:1\ntmp:0\nws:0\nsock:1\n"; out != want {
		t.Errorf("output = %q, want %q", out, want)
	}
}

func TestMissingImageNamesMakeImages(t *testing.T) {
	cli := newClient(t)
	d, err := New(&Options{InitPath: initBinary(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	spec := sandbox.DefaultSpec(workspace(t))
	spec.Image = "dsh/no-such-image:test"
	_, err = d.Open(context.Background(), spec, nil)
	if !errors.Is(err, ErrImageNotFound) || !strings.Contains(err.Error(), "make images") || !strings.Contains(err.Error(), spec.Image) {
		t.Fatalf("Open(missing image) = %v, want ErrImageNotFound naming the image and make images", err)
	}
	_ = cli
}

func TestOpenCloseLeavesNothing(t *testing.T) {
	cli := newClient(t)
	w := openEgressWorld(t, baseImage, &stubEgress{conns: make(chan net.Addr, 1)})
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close = %v, want the first call's nil", err)
	}
	if left := worldResources(t, cli, w.id); len(left) > 0 {
		t.Errorf("after Close, world %s left %v", w.id, left)
	}
	if _, err := w.Start(context.Background(), sandbox.ProcessSpec{Argv: []string{"true"}}); !errors.Is(err, ErrClosed) {
		t.Errorf("Start after Close = %v, want ErrClosed", err)
	}
}

// TestSyscallsRefused runs a static probe inside a world: the calls the
// Spec's contract denies in every driver fail.
func TestSyscallsRefused(t *testing.T) {
	w := openWorld(t, baseImage, nil)
	probe := filepath.Join(w.workspace, "probe")
	build := exec.Command("go", "build", "-o", probe, "./testdata/probe")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the probe: %v\n%s", err, out)
	}
	out, errOut, st := run(t, w, "", probe)
	if st.Code != 0 {
		t.Fatalf("probe: %v, stderr %q", st, errOut)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		name, res, _ := strings.Cut(line, ": ")
		if res == "allowed" {
			t.Errorf("%s was allowed inside the world", name)
		}
	}
	if n := strings.Count(out, "\n"); n != 5 {
		t.Errorf("probe printed %d lines, want 5: %q", n, out)
	}
}

// TestEgressOnlyThroughTheSocket: inside a world the proxy port on
// loopback reaches Spec.Egress; there is no interface but loopback, so a
// listener this test starts on the docker bridge is unreachable; and the
// resolver has no nameserver.
func TestEgressOnlyThroughTheSocket(t *testing.T) {
	bridge := dockerBridgeAddrs(t)
	if len(bridge) == 0 {
		t.Skip("no docker0 bridge to listen on")
	}
	l, err := net.Listen("tcp4", net.JoinHostPort(bridge[0], "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	reached := make(chan struct{}, 1)
	go func() {
		if c, err := l.Accept(); err == nil {
			reached <- struct{}{}
			c.Close()
		}
	}()
	egress := &stubEgress{conns: make(chan net.Addr, 1)}
	w := openEgressWorld(t, baseImage, egress)
	script := `read -r line < /dev/tcp/127.0.0.1/3128; echo "proxy: $line"
(exec 3<>/dev/tcp/` + l.Addr().(*net.TCPAddr).IP.String() + `/` + strconv.Itoa(l.Addr().(*net.TCPAddr).Port) + `) 2>/dev/null; echo "bridge: $?"
echo "interfaces: $(ls /sys/class/net | tr '\n' ' ')"
echo "nameservers: $(grep -c ^nameserver /etc/resolv.conf)"`
	out, errOut, _ := run(t, w, "", "bash", "-c", script)
	want := "proxy: proxy-hello\nbridge: 1\ninterfaces: lo \nnameservers: 0\n"
	if out != want {
		t.Errorf("inside the world:\n%s\nwant:\n%s\nstderr: %s", out, want, errOut)
	}
	select {
	case <-reached:
		t.Error("the listener on the docker bridge accepted a connection from the world")
	default:
	}
}

// TestCloseEndsRunningProcesses: Close with a process and its background
// child still running ends them (Wait returns) and removes the world.
func TestCloseEndsRunningProcesses(t *testing.T) {
	w := openWorld(t, baseImage, nil)
	p, err := w.Start(deadline(t), sandbox.ProcessSpec{Argv: []string{"bash", "-c", "sleep 1000 & sleep 1000"}})
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, p.Stdout())
	go io.Copy(io.Discard, p.Stderr())
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	done := make(chan struct{})
	go func() { p.Wait(); close(done) }()
	select {
	case <-done:
	case <-deadline(t).Done():
		t.Fatal("Wait did not return after Close")
	}
}

// TestEgressSurvivesKillAll: a command that kills every process it can
// does not end the world's egress (the relay is in the init).
func TestEgressSurvivesKillAll(t *testing.T) {
	w := openEgressWorld(t, baseImage, &stubEgress{conns: make(chan net.Addr, 4)})
	run(t, w, "", "bash", "-c", "kill -KILL -1; exit 0")
	script := `for i in $(seq 50); do if read -r line 2>/dev/null < /dev/tcp/127.0.0.1/3128; then echo "$line"; exit 0; fi; sleep 0.1; done; echo unreachable`
	if out, _, _ := run(t, w, "", "bash", "-c", script); out != "proxy-hello\n" {
		t.Errorf("after kill -1, the proxy port said %q, want %q", out, "proxy-hello\n")
	}
}
