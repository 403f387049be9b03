package native

import (
	"context"
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/sandbox"
	"github.com/dsh-dev/dsh/sandbox/native/initspawn"
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

// A path dsh checked and a world then swapped for a symbolic link (it
// may write a directory above it: a second world's workspace inside the
// first's) is refused, not followed: neither the workspace nor a bind
// source becomes what the link names, whether the swap comes before the
// driver plans the world (after the CLI checked the bind) or after.
func TestSwappedPathRefused(t *testing.T) {
	testenv.RequireUserNS(t)
	for _, swap := range []string{"workspace", "bind", "bind before plan"} {
		t.Run(swap, func(t *testing.T) {
			parent := hostTempDir(t)
			os.Chmod(parent, 0o755)
			ws, src, outside := filepath.Join(parent, "ws"), filepath.Join(parent, "src"), filepath.Join(parent, "outside")
			for _, d := range []string{ws, src, outside} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			os.WriteFile(filepath.Join(outside, "secret"), []byte("outside\n"), 0o644)
			spec := sandbox.DefaultSpec(ws)
			spec.Mounts = append(spec.Mounts, specs.Mount{Type: "bind", Source: src, Destination: "/tmp/src", Options: []string{"rbind"}})
			victim := ws
			if swap != "workspace" {
				victim = src
			}
			swapIt := func() {
				if err := os.Rename(victim, victim+".checked"); err != nil {
					t.Error(err)
				}
				if err := os.Symlink(outside, victim); err != nil {
					t.Error(err)
				}
			}
			want := "a symbolic link is in its path"
			if swap == "bind before plan" {
				swapIt()
				want = "is not its real path"
			} else {
				afterPlan = swapIt
				t.Cleanup(func() { afterPlan = func() {} })
			}
			in, err := New(&Options{Executable: initExe(t), StateDir: stateDir(t)}).Open(context.Background(), spec, nil)
			if err == nil {
				defer in.Close()
				out, _, _ := run(t, in, nil, "/bin/sh", "-c", "cat "+ws+"/secret /tmp/src/secret 2>&1")
				t.Fatalf("the world opened on the swapped %s; it reads: %s", swap, out)
			}
			if !strings.Contains(err.Error(), want) {
				t.Errorf("Open = %v, want refused for the link in the path (%q)", err, want)
			}
		})
	}
}

// A root dsh's state directory is searchable before any init spawns: a
// mapped init mounts its root on it, as an unprivileged host uid, before
// its release.
func TestRootStateDirSearchable(t *testing.T) {
	testenv.RequireRoot(t)
	dir := filepath.Join(t.TempDir(), "state")
	if _, err := stateBase(dir); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o711 {
		t.Fatalf("a new state directory: %v, %v; want mode 0711", fi.Mode().Perm(), err)
	}
}

// initspawn chooses the state directory before package sandbox is
// initialised: its list must be sandbox's, which the validation refuses
// as a workspace.
func TestInitspawnStateDirsAreSandboxs(t *testing.T) {
	for _, uid := range []int{0, 1000, 65534} {
		if got, want := initspawn.StateDirs(uid), sandbox.StateDirs(uid); !slices.Equal(got, want) {
			t.Errorf("initspawn.StateDirs(%d) = %q, sandbox.StateDirs = %q", uid, got, want)
		}
	}
}

// Each home is listed once, however many sources name it: $HOME is most
// often the password database's home, and expandMasks resolves every "~"
// mask in each home listed.
func TestHomeDirsListsEachHomeOnce(t *testing.T) {
	u, err := user.LookupId(strconv.Itoa(os.Getuid()))
	if err != nil || u.HomeDir == "" {
		t.Skipf("no home in the password database for uid %d: %v", os.Getuid(), err)
	}
	t.Setenv("HOME", u.HomeDir)
	if got := homeDirs(); !slices.Equal(got, []string{u.HomeDir}) {
		t.Errorf("homeDirs() with HOME the database's %s = %q, want it once", u.HomeDir, got)
	}
}
