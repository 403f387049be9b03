package docker

import (
	"context"
	"net"
	"os/exec"
	"testing"

	"github.com/dsh-dev/dsh/sandbox"
)

// Benchmarks compare the driver with the docker CLI in the same run
// (make bench; results in docs/BENCHMARKS.md):
//
//	go test -run '^$' -bench . -benchtime 10x ./sandbox/docker

// BenchmarkWorldOpen: a world's whole life (create, start, init answers,
// close, removed) against `docker run --rm IMG true`, the CLI's whole life
// of a container. With egress the world also gets its own network and
// firewall rule; that sub-benchmark is the measurement behind the
// per-world network choice.
func BenchmarkWorldOpen(b *testing.B) {
	cli := newClient(b)
	requireImage(b, cli, baseImage)
	d, err := New(&Options{InitPath: initBinary(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	ws := workspace(b)
	// withClose: time Close too (the world's whole life, like docker run
	// --rm); else only Open (create + start + the init's first answer).
	open := func(b *testing.B, egress, withClose bool) {
		for b.Loop() {
			spec := sandbox.DefaultSpec(ws)
			var opts *sandbox.OpenOptions
			if egress {
				spec.Egress = true
				opts = &sandbox.OpenOptions{Egress: &stubEgress{conns: make(chan net.Addr, 1)}}
			}
			inst, err := d.Open(context.Background(), spec, opts)
			if err != nil {
				b.Fatal(err)
			}
			if !withClose {
				b.StopTimer()
			}
			if err := inst.Close(); err != nil {
				b.Fatal(err)
			}
			if !withClose {
				b.StartTimer()
			}
		}
	}
	dockerRun := func(args ...string) func(b *testing.B) {
		return func(b *testing.B) {
			for b.Loop() {
				argv := append([]string{"run", "--rm", "--label", sandbox.LabelManaged + "=true"}, args...)
				out, err := exec.Command("docker", append(argv, baseImage, "true")...).CombinedOutput()
				if err != nil {
					b.Fatalf("docker run: %v: %s", err, out)
				}
			}
		}
	}
	// The baseline as users type it (default bridge network), and with no
	// network, the fair peer of a world without egress.
	b.Run("docker-run-rm", dockerRun())
	b.Run("docker-run-rm-net-none", dockerRun("--network", "none"))
	// What a shared network would cost per world: a container joining an
	// internal network that already exists (the network is made once).
	shared := "dsh-bench-shared-" + sandbox.NewWorldID()
	if out, err := exec.Command("docker", "network", "create", "--internal", "--label", sandbox.LabelManaged+"=true",
		"-o", "com.docker.network.bridge.enable_icc=false", shared).CombinedOutput(); err != nil {
		b.Fatalf("docker network create: %v: %s", err, out)
	}
	defer exec.Command("docker", "network", "rm", shared).Run()
	b.Run("docker-run-rm-existing-internal-net", dockerRun("--network", shared))
	b.Run("docker-network-create-rm", func(b *testing.B) {
		for b.Loop() {
			name := "dsh-bench-" + sandbox.NewWorldID()
			if out, err := exec.Command("docker", "network", "create", "--internal", "--label", sandbox.LabelManaged+"=true", name).CombinedOutput(); err != nil {
				b.Fatalf("docker network create: %v: %s", err, out)
			}
			if out, err := exec.Command("docker", "network", "rm", name).CombinedOutput(); err != nil {
				b.Fatalf("docker network rm: %v: %s", err, out)
			}
		}
	})
	b.Run("dsh-open", func(b *testing.B) { open(b, false, false) })
	b.Run("dsh-open-close", func(b *testing.B) { open(b, false, true) })
	b.Run("dsh-open-egress", func(b *testing.B) { open(b, true, false) })
	b.Run("dsh-open-close-egress", func(b *testing.B) { open(b, true, true) })
}

// BenchmarkRoundTrip: one command (`true`) in a warm world through the
// init, against `docker exec CONTAINER true` on a running container.
func BenchmarkRoundTrip(b *testing.B) {
	cli := newClient(b)
	requireImage(b, cli, baseImage)
	d, err := New(&Options{InitPath: initBinary(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	inst, err := d.Open(context.Background(), sandbox.DefaultSpec(workspace(b)), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer inst.Close()
	ctr, err := exec.Command("docker", "run", "-d", "--rm", "--label", sandbox.LabelManaged+"=true", "--network", "none", baseImage, "sleep", "infinity").Output()
	if err != nil {
		b.Fatal(err)
	}
	id := string(ctr[:len(ctr)-1])
	defer exec.Command("docker", "rm", "-f", id).Run()

	b.Run("docker-exec", func(b *testing.B) {
		for b.Loop() {
			if out, err := exec.Command("docker", "exec", id, "true").CombinedOutput(); err != nil {
				b.Fatalf("docker exec: %v: %s", err, out)
			}
		}
	})
	b.Run("dsh-start-wait", func(b *testing.B) {
		for b.Loop() {
			p, err := inst.Start(context.Background(), sandbox.ProcessSpec{Argv: []string{"true"}})
			if err != nil {
				b.Fatal(err)
			}
			if st, err := p.Wait(); err != nil || st.Code != 0 {
				b.Fatalf("true: %v, %v", st, err)
			}
		}
	})
}
