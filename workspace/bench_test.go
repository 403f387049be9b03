package workspace

import (
	"fmt"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/execworld"
)

// BenchmarkCreateToFirstExec times what a platform waits for: from the
// create of a workspace to the exit of its first command (`true`), with
// a warm pool of the template and without one, on native and docker,
// beside `docker run --rm dsh/base true` in the same run. Each reports
// its p50 and p99 (ms); the workspace is deleted outside the timing, and
// a pooled run waits, untimed, until the pool is full again, so that
// every create finds a pooled world.
//
//	go test ./workspace -run '^$' -bench CreateToFirstExec -benchtime 50x
func BenchmarkCreateToFirstExec(b *testing.B) {
	for _, drv := range []string{"native", "docker"} {
		for _, pooled := range []bool{true, false} {
			name := drv + "/nopool"
			if pooled {
				name = drv + "/pool"
			}
			b.Run(name, func(b *testing.B) { benchCreate(b, drv, pooled) })
		}
	}
	b.Run("docker-run", func(b *testing.B) {
		dockerDriver(b) // requires docker and the image
		ds := make([]time.Duration, 0, b.N)
		for b.Loop() {
			t0 := time.Now()
			if out, err := exec.Command("docker", "run", "--rm", "--network", "none", "dsh/base:latest", "true").CombinedOutput(); err != nil {
				b.Fatalf("docker run: %v\n%s", err, out)
			}
			ds = append(ds, time.Since(t0))
		}
		reportPercentiles(b, ds)
	})
}

func benchCreate(b *testing.B, drv string, pooled bool) {
	tmpl := small
	var op Opener
	switch drv {
	case "native":
		op = &realOpener{backends: map[string]execworld.Backend{"native": newNative(b).driver}}
	case "docker":
		tmpl = smallDocker
		op = &realOpener{backends: map[string]execworld.Backend{"docker": dockerDriver(b)}}
	}
	o := &Options{Root: b.TempDir(), Opener: op, DefaultDriver: drv}
	if pooled {
		o.Pool = []PoolSpec{{Template: tmpl, Size: 2}}
	}
	m, err := New(o)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	waitPool := func() {
		if pooled && !waitFor(2*time.Minute, func() bool { return m.pools[0].readyCount() == 2 }) {
			b.Fatal("the pool does not fill")
		}
	}
	ds := make([]time.Duration, 0, b.N)
	creates := make([]time.Duration, 0, b.N)
	i := 0
	waitPool()
	b.ResetTimer()
	for b.Loop() {
		name := fmt.Sprintf("b-%d", i)
		i++
		t0 := time.Now()
		c, err := m.Create(bg, &CreateRequest{Name: name, Template: tmpl})
		if err != nil {
			b.Fatal(err)
		}
		creates = append(creates, time.Since(t0))
		w, release, err := m.World(bg, name)
		if err != nil {
			b.Fatal(err)
		}
		res, err := w.Exec.Run(bg, &execworld.Cmd{Argv: []string{"true"}})
		release()
		if err != nil || res.ExitCode() != 0 {
			b.Fatalf("true: %v %+v", err, res)
		}
		ds = append(ds, time.Since(t0))
		b.StopTimer()
		if c.Workspace.Pooled != pooled {
			b.Fatalf("pooled = %v, want %v", c.Workspace.Pooled, pooled)
		}
		if err := m.Delete(bg, name); err != nil {
			b.Fatal(err)
		}
		waitPool()
		b.StartTimer()
	}
	reportPercentiles(b, ds)
	slices.Sort(creates)
	b.ReportMetric(float64(creates[len(creates)/2].Microseconds())/1000, "create-p50-ms")
}

func reportPercentiles(b *testing.B, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	at := func(q float64) float64 {
		i := min(int(q*float64(len(ds))), len(ds)-1)
		return float64(ds[i].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}
