package docker

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"

	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/sandbox"
)

const (
	baseImage    = "dsh/base:latest"
	fixtureImage = "dsh/fixture:latest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveStaticDsh()
	os.Exit(code)
}

// initBinary returns the path of a static dsh binary built from ./cmd/dsh.
func initBinary(t testing.TB) string { return testenv.StaticDsh(t) }

// requireImage fails the test when an image `make images` builds is absent.
func requireImage(t testing.TB, cli *client.Client, image string) {
	t.Helper()
	if _, err := cli.ImageInspect(context.Background(), image); err != nil {
		t.Fatalf("image %s: %v (build it with: make images)", image, err)
	}
}

func newClient(t testing.TB) *client.Client {
	t.Helper()
	testenv.RequireDocker(t)
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// workspace returns a fresh workspace directory the world's non-root user
// (uid 1000 in dsh/base) can write.
func workspace(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chown(dir, 1000, 1000); err != nil && os.Geteuid() == 0 {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// worldResources lists the containers and networks labelled with world id.
func worldResources(t testing.TB, cli *client.Client, worldID string) []string {
	t.Helper()
	ctx := context.Background()
	f := filters.NewArgs(filters.Arg("label", sandbox.LabelWorld+"="+worldID))
	var left []string
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		left = append(left, "container "+strings.Join(c.Names, ","))
	}
	ns, err := cli.NetworkList(ctx, network.ListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range ns {
		left = append(left, "network "+n.Name)
	}
	return left
}

// cleanupWorld closes w at the end of the test and checks nothing of it
// is left.
func cleanupWorld(t testing.TB, cli *client.Client, w *world) {
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if left := worldResources(t, cli, w.id); len(left) > 0 {
			t.Errorf("after Close, world %s left %v", w.id, left)
		}
		if w.tmpDir != "" {
			if _, err := os.Stat(w.tmpDir); !os.IsNotExist(err) {
				t.Errorf("after Close, the world's host files %s remain (%v)", w.tmpDir, err)
			}
		}
	})
}

// deadline bounds a test's docker calls.
func deadline(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// openFixtureWorld opens a world of the fixture image with d, removed
// when the test ends.
func openFixtureWorld(t testing.TB, cli *client.Client, d *Driver) *world {
	t.Helper()
	spec := sandbox.DefaultSpec(workspace(t))
	spec.Image = fixtureImage
	inst, err := d.Open(deadline(t), spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := inst.(*world)
	cleanupWorld(t, cli, w)
	return w
}
