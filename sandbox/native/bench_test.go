package native

import (
	"context"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/sandbox"
)

// buildDsh builds the static dsh binary the way `make build` does (the
// small init first, then dsh embedding it), or uses the one named by
// DSH_BENCH_DSH. It returns dsh and the init the world variant runs:
// DSH_BENCH_INIT if set, else the small init it built, else (with
// DSH_BENCH_DSH) that dsh binary itself.
func buildDsh(b *testing.B) (dsh, initBin string) {
	b.Helper()
	initBin = os.Getenv("DSH_BENCH_INIT")
	if bin := os.Getenv("DSH_BENCH_DSH"); bin != "" {
		if initBin == "" {
			initBin = bin
		}
		return bin, initBin
	}
	dir := b.TempDir()
	small := filepath.Join(dir, "dsh-init")
	bin := filepath.Join(dir, "dsh")
	for _, args := range [][]string{
		{"build", "-trimpath", "-ldflags", testenv.InitLDFlags(), "-o", small, "github.com/dsh-dev/dsh/cmd/dsh-init"},
		{"build", "-trimpath", "-tags", "embedinit", "-ldflags", "-s -w", "-o", bin, "github.com/dsh-dev/dsh/cmd/dsh"},
	} {
		if args[len(args)-1] == "github.com/dsh-dev/dsh/cmd/dsh" {
			// go:embed reads it from the package directory, as make does.
			data, err := os.ReadFile(small)
			if err != nil {
				b.Fatal(err)
			}
			if err := testenv.WriteEmbeddedInit("initbin/dsh-init", data); err != nil {
				b.Fatal(err)
			}
		}
		cmd := exec.Command("go", args...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("building %s: %v\n%s", args[len(args)-1], err, out)
		}
	}
	if initBin == "" {
		initBin = small
	}
	return bin, initBin
}

// buildHello builds the smallest static Go program, func main() {}: what
// starting any Go binary costs on this machine before it does anything.
func buildHello(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	for name, text := range map[string]string{
		"go.mod":  "module hello\n",
		"main.go": "package main\n\nfunc main() {}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "hello")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("building hello: %v\n%s", err, out)
	}
	return bin
}

// BenchmarkStartTrue compares, in one run and interleaved so machine load
// hits every variant alike, the latency of running /bin/true. Each round
// runs the variants in a new random order (seeded, so runs repeat it):
// a run leaves work behind it (the kernel's teardown of its namespaces),
// and in a fixed order each variant would always pay for the same
// predecessor's.
//
//	forkexec   plain fork/exec of /bin/true (the floor)
//	go-hello   a static Go program with an empty main: the Go runtime's start
//	dsh-start  dsh version: starting the static dsh binary, the floor of any dsh command
//	bwrap      bwrap --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --unshare-all --die-with-parent /bin/true
//	dsh-run    dsh run -- /bin/true (static dsh; native driver, default limits, masks, seccomp, egress proxy)
//	world      Open + Start(/bin/true) + Wait + Close of a native world in-process (the init
//	           dsh runs: its embedded small init, see buildDsh)
//	warm       Start(/bin/true) + Wait in a world that is already open (how dsh serve runs commands)
//	dsh-run-nolimits  dsh run --no-limits -- /bin/true: the same without a cgroup
//	cgroup-move       cgroup v1 only: moving a sleeping process to another pids cgroup, one
//	                  write of cgroup.procs, which waits for an RCU grace period of the kernel:
//	                  the floor of placing the init in its cgroup there
//
// The targets are reported as target-run, (dsh-run - 2 dsh-start) /
// bwrap, what dsh adds beyond its two binary starts (the CLI and the
// init), and target-world, (world - dsh-start) / bwrap (p50s).
//
// It reports p50 and p99 wall time of each in ms, the p50 CPU time (user
// + sys of this process and its children, less sensitive to the load of
// a shared machine), and the p50 ratio of each variant to bwrap.
func BenchmarkStartTrue(b *testing.B) {
	testenv.RequireUserNS(b)
	testenv.RequireCgroups(b)
	bwrap := testenv.RequireCommand(b, "bwrap")
	dsh, initBin := buildDsh(b)
	hello := buildHello(b)
	ws := b.TempDir()
	d := New(&Options{Executable: initBin, StateDir: stateDir(b)})
	spec := sandbox.DefaultSpec(ws)

	warm, err := d.Open(context.Background(), spec, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer warm.Close()
	runTrue := func(in sandbox.Instance) error {
		p, err := in.Start(context.Background(), sandbox.ProcessSpec{Argv: []string{"/bin/true"}, Env: spec.Env})
		if err != nil {
			return err
		}
		io.Copy(io.Discard, p.Stdout())
		io.Copy(io.Discard, p.Stderr())
		_, err = p.Wait()
		return err
	}
	variants := []struct {
		name string
		run  func() error
	}{
		{"forkexec", func() error { return exec.Command("/bin/true").Run() }},
		{"go-hello", func() error { return exec.Command(hello).Run() }},
		{"dsh-start", func() error { return exec.Command(dsh, "version").Run() }},
		{"bwrap", func() error {
			return exec.Command(bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
				"--unshare-all", "--die-with-parent", "/bin/true").Run()
		}},
		{"dsh-run", func() error {
			cmd := exec.Command(dsh, "run", "--workspace", ws, "--", "/bin/true")
			cmd.Dir = ws
			return cmd.Run()
		}},
		{"world", func() error {
			ctx := context.Background()
			in, err := d.Open(ctx, spec, nil)
			if err != nil {
				return err
			}
			defer in.Close()
			if err := runTrue(in); err != nil {
				return err
			}
			return in.Close()
		}},
		{"warm", func() error { return runTrue(warm) }},
		{"dsh-run-nolimits", func() error {
			cmd := exec.Command(dsh, "run", "--no-limits", "--workspace", ws, "--", "/bin/true")
			cmd.Dir = ws
			return cmd.Run()
		}},
	}
	if !unified() {
		move, err := cgroupMover(b)
		if err != nil {
			b.Fatal(err)
		}
		variants = append(variants, struct {
			name string
			run  func() error
		}{"cgroup-move", move})
	}
	times := make([][]time.Duration, len(variants))
	cpu := make([][]time.Duration, len(variants))
	for i := range variants { // warm up caches once
		if err := variants[i].run(); err != nil {
			b.Fatalf("%s: %v", variants[i].name, err)
		}
	}
	b.ResetTimer()
	rng := rand.New(rand.NewPCG(1, 2)) // the order of each round
	for n := 0; n < b.N; n++ {
		for _, i := range rng.Perm(len(variants)) {
			v := variants[i]
			start, c0 := time.Now(), cpuTime()
			if err := v.run(); err != nil {
				b.Fatalf("%s: %v", v.name, err)
			}
			times[i] = append(times[i], time.Since(start))
			cpu[i] = append(cpu[i], cpuTime()-c0)
		}
	}
	b.StopTimer()
	p50 := make(map[string]float64, len(variants))
	for i, v := range variants {
		slices.Sort(times[i])
		p50[v.name] = ms(pct(times[i], 50))
		b.ReportMetric(p50[v.name], v.name+"-p50-ms")
		b.ReportMetric(ms(pct(times[i], 99)), v.name+"-p99-ms")
		slices.Sort(cpu[i])
		b.ReportMetric(ms(pct(cpu[i], 50)), v.name+"-cpu-p50-ms")
	}
	for _, v := range variants {
		if v.name != "bwrap" {
			b.ReportMetric(p50[v.name]/p50["bwrap"], v.name+"/bwrap-p50")
		}
	}
	b.ReportMetric((p50["dsh-run"]-2*p50["dsh-start"])/p50["bwrap"], "target-run")
	b.ReportMetric((p50["world"]-p50["dsh-start"])/p50["bwrap"], "target-world")
}

// cgroupMover starts a sleeper and returns a function that moves it to
// the other of two cgroup v1 pids groups (one write of cgroup.procs).
func cgroupMover(b *testing.B) (func() error, error) {
	sleeper := exec.Command("sleep", "3600")
	if err := sleeper.Start(); err != nil {
		return nil, err
	}
	var dirs []string
	for _, name := range []string{"a", "b"} {
		d := filepath.Join(cgroupRoot, "pids", cgroupParent, "bench-move-"+strconv.Itoa(os.Getpid())+"-"+name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
		dirs = append(dirs, d)
	}
	b.Cleanup(func() {
		sleeper.Process.Kill()
		sleeper.Wait()
		for _, d := range dirs {
			for deadline := time.Now().Add(2 * time.Second); syscall.Rmdir(d) == syscall.EBUSY && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
		}
	})
	pid := []byte(strconv.Itoa(sleeper.Process.Pid))
	n := 0
	return func() error {
		n++
		return os.WriteFile(filepath.Join(dirs[n%2], "cgroup.procs"), pid, 0)
	}, nil
}

// cpuTime is the user+sys time of this process and its waited-for
// children so far.
func cpuTime() time.Duration {
	var self, kids syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(kids.Utime) + tv(kids.Stime)
}

func pct(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100
	if i > 0 {
		i--
	}
	return sorted[i]
}
