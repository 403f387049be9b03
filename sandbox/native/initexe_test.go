package native

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/sandbox"
	"github.com/dsh-dev/dsh/sandbox/native/initbin"
	"github.com/dsh-dev/dsh/sandbox/native/initspawn"
)

// embedSmallInit makes this test binary embed the small init, as dsh
// built by `make build` does, with no source refused yet; everything is
// put back when the test ends.
func embedSmallInit(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(buildSmallInit(t))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	savedInit, savedSum := initbin.Binary, initbin.Sum
	savedFile, savedErr := memfdFile, memfdErr
	var savedRefused [initOwn]bool
	for i := range initRefused {
		savedRefused[i] = initRefused[i].Load()
		initRefused[i].Store(false)
	}
	initbin.Binary, initbin.Sum = data, hex.EncodeToString(sum[:])
	savedBase := cachedInitBase
	t.Cleanup(func() { cachedInitBase = savedBase })
	memfdOnce, memfdFile, memfdErr = sync.Once{}, nil, nil
	t.Cleanup(func() {
		initbin.Binary, initbin.Sum = savedInit, savedSum
		memfdOnce = sync.Once{}
		memfdOnce.Do(func() {})
		memfdFile, memfdErr = savedFile, savedErr
		for i := range initRefused {
			initRefused[i].Store(savedRefused[i])
		}
	})
	return data
}

// initExeOf is what the kernel says the world's init executes.
func initExeOf(t *testing.T, in sandbox.Instance) string {
	t.Helper()
	exe, err := os.Readlink("/proc/" + strconv.Itoa(in.(*instance).l.cmd.Process.Pid) + "/exe")
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// openEchoClose opens a world of the embedded init (no Executable),
// checks it runs a command and returns what its init executed.
func openEchoClose(t *testing.T, state string) string {
	t.Helper()
	spec := sandbox.DefaultSpec(t.TempDir())
	in, err := New(&Options{StateDir: state, Stderr: os.Stderr}).Open(context.Background(), spec, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer in.Close()
	exe := initExeOf(t, in)
	if out, errOut, st := run(t, in, spec.Env, "sh", "-c", "echo ok"); st.Code != 0 || out != "ok\n" {
		t.Fatalf("run: %v %q %q", st, out, errOut)
	}
	return exe
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// TestCachedInit: the embedded init is written once into the state
// directory (whole, 0555) and every later world executes that file,
// with no copy.
func TestCachedInit(t *testing.T) {
	testenv.RequireUserNS(t)
	testenv.RequireCgroups(t)
	testenv.RequireRoot(t)
	data := embedSmallInit(t)
	state := stateDir(t)
	cachedInitBase = state
	name := initspawn.CachedInitName(state)
	if exe := openEchoClose(t, state); exe != name {
		t.Fatalf("the init executed %s, want its file %s", exe, name)
	}
	fi, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o555 || fi.Size() != int64(len(data)) {
		t.Errorf("%s: mode %v, %d bytes; want 0555 and %d", name, fi.Mode(), fi.Size(), len(data))
	}
	ino := inode(t, name)
	if exe := openEchoClose(t, state); exe != name {
		t.Fatalf("the second world's init executed %s, want %s", exe, name)
	}
	if inode(t, name) != ino {
		t.Error("the second world wrote the init again")
	}
}

// TestCachedInitIsNotTakenOnTrust: a file at the init's name that is not
// exactly as dsh leaves it (writable, a link, a second name, another
// size, another owner) is never executed: it is replaced by the embedded
// init. Each planted file is a script that leaves a mark if it runs.
func TestCachedInitIsNotTakenOnTrust(t *testing.T) {
	testenv.RequireUserNS(t)
	testenv.RequireCgroups(t)
	testenv.RequireRoot(t)
	data := embedSmallInit(t)
	// Where the init (any uid of the world's range) can write a mark.
	marks := hostTempDir(t)
	os.Chmod(marks, 0o777)
	// A script of exactly the init's size, unless short.
	script := func(mark string, short bool) []byte {
		b := []byte("#!/bin/sh\ntouch " + filepath.Join(marks, mark) + "\n#")
		if !short {
			b = append(b, bytes.Repeat([]byte("#"), len(data)-len(b))...)
		}
		return b
	}
	plant := func(t *testing.T, path string, b []byte, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name  string
		plant func(t *testing.T, state, name string)
	}{
		{"writable", func(t *testing.T, state, name string) { plant(t, name, script("writable", false), 0o755) }},
		{"another size", func(t *testing.T, state, name string) { plant(t, name, script("size", true), 0o555) }},
		{"a symbolic link", func(t *testing.T, state, name string) {
			other := filepath.Join(state, "planted")
			plant(t, other, script("link", false), 0o555)
			if err := os.Symlink(other, name); err != nil {
				t.Fatal(err)
			}
		}},
		{"a second name", func(t *testing.T, state, name string) {
			other := filepath.Join(state, "planted")
			plant(t, other, script("hardlink", false), 0o555)
			if err := os.Link(other, name); err != nil {
				t.Fatal(err)
			}
		}},
		{"another owner", func(t *testing.T, state, name string) {
			testenv.RequireRoot(t)
			plant(t, name, script("owner", false), 0o555)
			if err := os.Lchown(name, 4242, 4242); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			state := stateDir(t)
			cachedInitBase = state
			if _, err := stateBase(state); err != nil {
				t.Fatal(err)
			}
			name := initspawn.CachedInitName(state)
			c.plant(t, state, name)
			if exe := openEchoClose(t, state); exe != name {
				t.Errorf("the init executed %s, want its file %s", exe, name)
			}
			if got, err := os.ReadFile(name); err != nil || !bytes.Equal(got, data) {
				t.Errorf("%s is not the embedded init after the start (%v)", name, err)
			}
			if m, _ := os.ReadDir(marks); len(m) > 0 {
				t.Errorf("the planted file ran: %s", m[0].Name())
			}
		})
	}
}

// TestInitRefusedFallsBack: where the kernel refuses to execute the
// init's file (a noexec state directory), the world starts on the memfd;
// where it refuses the memfd too, on dsh's own binary. Each refusal is
// remembered, so later starts do not try again.
func TestInitRefusedFallsBack(t *testing.T) {
	testenv.RequireUserNS(t)
	testenv.RequireCgroups(t)
	testenv.RequireRoot(t)
	embedSmallInit(t)
	state := stateDir(t)
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", state, "tmpfs", unix.MS_NOEXEC|unix.MS_NOSUID|unix.MS_NODEV, "mode=0700"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(state, unix.MNT_DETACH) })
	cachedInitBase = state
	if exe := openEchoClose(t, state); !strings.HasPrefix(exe, "/memfd:dsh-init") {
		t.Errorf("the init executed %s, want the memfd", exe)
	}
	if !initRefused[initCached].Load() {
		t.Error("the refused file is not remembered: every start would try it again")
	}

	// A memfd without any execute bit, which even root may not execute,
	// stands in for the process's.
	fd, err := unix.MemfdCreate("dsh-init-test", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unix.Write(fd, []byte("\x7fELF not an init")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fchmod(fd, 0o644); err != nil {
		t.Fatal(err)
	}
	memfdOnce = sync.Once{}
	memfdOnce.Do(func() { memfdFile, memfdErr = os.NewFile(uintptr(fd), "dsh-init-test"), nil })
	if exe := openEchoClose(t, state); exe != testExe(t) {
		t.Errorf("the init executed %s, want dsh's own binary %s", exe, testExe(t))
	}
	if !initRefused[initMemfd].Load() {
		t.Error("the refused memfd is not remembered: every start would try it again")
	}
}

// TestCachedInitSweep: writing the init removes other dsh binaries'
// inits but the keptInits newest, and temporary files abandoned over a
// minute ago, and leaves everything else.
func TestCachedInitSweep(t *testing.T) {
	embedSmallInit(t)
	state := t.TempDir()
	old := time.Now().Add(-time.Hour)
	var planted []string
	for i := range 5 {
		p := filepath.Join(state, fmt.Sprintf("init-%032d", i))
		if err := os.WriteFile(p, nil, 0o555); err != nil {
			t.Fatal(err)
		}
		mod := old.Add(time.Duration(i) * time.Minute) // i = 4 is the newest
		os.Chtimes(p, mod, mod)
		planted = append(planted, p)
	}
	abandoned, writing := filepath.Join(state, ".init-1"), filepath.Join(state, ".init-2")
	for _, p := range []string{abandoned, writing, filepath.Join(state, "123-456-world")} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	os.Chtimes(abandoned, old, old)
	name := initspawn.CachedInitName(state)
	if err := writeCachedInit(state, name); err != nil {
		t.Fatal(err)
	}
	var left []string
	entries, _ := os.ReadDir(state)
	for _, e := range entries {
		left = append(left, e.Name())
	}
	want := []string{".init-2", "123-456-world", filepath.Base(planted[2]), filepath.Base(planted[3]), filepath.Base(planted[4]), filepath.Base(name)}
	if strings.Join(left, " ") != strings.Join(want, " ") {
		t.Errorf("left after the write: %v\nwant %v", left, want)
	}
	if _, err := initspawn.OpenInitFile(name); err != nil {
		t.Errorf("the written init does not pass its own checks: %v", err)
	}
}

// Only a root dsh's own state directory keeps the init's file: any other
// (an unprivileged caller's, which may lie inside a workspace a world
// writes as that caller) runs the memfd.
func TestCachedInitOnlyInRootsStateDirectory(t *testing.T) {
	embedSmallInit(t)
	if cachesInit(stateDir(t)) {
		t.Errorf("a state directory other than %s keeps the init's file", cachedInitBase)
	}
	if want := os.Geteuid() == 0; cachesInit("/run/dsh-native") != want {
		t.Errorf("cachesInit(/run/dsh-native) = %v, want %v for euid %d", !want, want, os.Geteuid())
	}
}
