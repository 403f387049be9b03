package native

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/sandbox"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// A Spec refused by the rules of every driver is this driver's
// unsupported-spec error and the shared *sandbox.SpecError at once.
func TestCheckSpecUsesTheSharedValidation(t *testing.T) {
	_, err := checkSpec(sandbox.DefaultSpec("/etc"))
	var se *sandbox.SpecError
	if !errors.Is(err, ErrUnsupportedSpec) || !errors.As(err, &se) || se.Field != "Workspace" {
		t.Fatalf("checkSpec(workspace /etc) = %v, want ErrUnsupportedSpec and a Workspace *sandbox.SpecError", err)
	}
	ws := t.TempDir()
	if real, err := checkSpec(sandbox.DefaultSpec(ws)); err != nil || real != ws {
		t.Fatalf("checkSpec(%s) = %q, %v; want the real path and nil", ws, real, err)
	}
}

// A world never writes the state directory, whichever it is: a
// workspace or a writable bind source that is, lies inside or contains
// Options.StateDir is refused before anything starts. A relative one is
// refused too.
func TestStateDirApartFromWorlds(t *testing.T) {
	testenv.RequireUserNS(t)
	outer := hostTempDir(t)
	os.Chmod(outer, 0o711) // private; a mapped world searches it
	inner := filepath.Join(outer, "inner")
	if err := os.Mkdir(inner, 0o700); err != nil {
		t.Fatal(err)
	}
	other := hostTempDir(t)
	for _, tc := range []struct {
		name, state, ws, bind, field string
	}{
		{"workspace inside", outer, inner, "", "Workspace"},
		{"workspace around", inner, outer, "", "Workspace"},
		{"workspace is it", outer, outer, "", "Workspace"},
		{"bind around", inner, other, outer, "Mounts[0]"},
		{"bind inside", outer, other, inner, "Mounts[0]"},
	} {
		spec := sandbox.DefaultSpec(tc.ws)
		if tc.bind != "" {
			spec.Mounts = append([]specs.Mount{{Type: "bind", Source: tc.bind, Destination: "/tmp/x", Options: []string{"rbind"}}}, spec.Mounts...)
		}
		in, err := New(&Options{Executable: initExe(t), StateDir: tc.state}).Open(context.Background(), spec, nil)
		if in != nil {
			in.Close()
		}
		var se *sandbox.SpecError
		if !errors.As(err, &se) || se.Field != tc.field || !strings.Contains(err.Error(), "state directory") {
			t.Errorf("%s: Open = %v, want a %s SpecError naming the state directory", tc.name, err, tc.field)
		}
	}
	if _, err := New(&Options{Executable: initExe(t), StateDir: "state"}).Open(context.Background(), sandbox.DefaultSpec(other), nil); err == nil || !strings.Contains(err.Error(), "not an absolute path") {
		t.Errorf("a relative StateDir: Open = %v, want refused as not absolute", err)
	}
}
