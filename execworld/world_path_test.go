package execworld_test

import (
	"errors"
	"path/filepath"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/execworld/execworldtest"
	"github.com/dsh-dev/dsh/sandbox"
)

func TestPathMapping(t *testing.T) {
	spec := sandbox.DefaultSpec(t.TempDir())
	src := t.TempDir()
	spec.Mounts = append(spec.Mounts, specs.Mount{Destination: "/opt/ref", Type: "bind", Source: src, Options: []string{"rbind", "ro"}})
	w, _ := execworldtest.NewWorld(t, &execworld.Options{Spec: spec})
	ws := w.FS.Root()
	for _, c := range []struct{ host, world string }{
		{ws, ws},
		{ws + "/a/b.go", ws + "/a/b.go"},
		{src + "/x/y", "/opt/ref/x/y"},
		{src, "/opt/ref"},
	} {
		if got, err := w.PathInside(c.host); err != nil || got != c.world {
			t.Errorf("PathInside(%q) = %q, %v; want %q", c.host, got, err, c.world)
		}
		if got, err := w.PathOutside(c.world); err != nil || got != c.host {
			t.Errorf("PathOutside(%q) = %q, %v; want %q", c.world, got, err, c.host)
		}
	}
	for _, p := range []string{"/etc/passwd", filepath.Dir(ws), ws + "x", ws + "/../other", "relative/path"} {
		if got, err := w.PathInside(p); !errors.Is(err, execworld.ErrNotInWorld) {
			t.Errorf("PathInside(%q) = %q, %v; want ErrNotInWorld", p, got, err)
		}
	}
	for _, p := range []string{"/tmp/x", "/usr/bin/go", "/opt/refx"} {
		if got, err := w.PathOutside(p); !errors.Is(err, execworld.ErrNotInWorld) {
			t.Errorf("PathOutside(%q) = %q, %v; want ErrNotInWorld", p, got, err)
		}
	}
}
