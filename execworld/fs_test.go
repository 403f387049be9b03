package execworld_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/dsh-dev/dsh/execworld"
)

// layout makes <tmp>/ws (the workspace) and <tmp>/outside/secret, a file
// no workspace operation may read or change.
func layout(t *testing.T) (fsys *execworld.FS, ws, outside string) {
	t.Helper()
	base := t.TempDir()
	ws = filepath.Join(base, "ws")
	outside = filepath.Join(base, "outside")
	for _, d := range []string{ws, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(t, filepath.Join(outside, "secret"), "TOP-SECRET")
	fsys, err := execworld.OpenFS(ws)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fsys.Close() })
	return fsys, ws, outside
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestEscapesAreRefused(t *testing.T) {
	fsys, ws, outside := layout(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(filepath.Join(outside, "secret"), filepath.Join(ws, "abs-link")))
	must(os.Symlink("../outside/secret", filepath.Join(ws, "rel-link")))
	must(os.Symlink(outside, filepath.Join(ws, "dir-link")))
	must(os.Symlink("../outside", filepath.Join(ws, "rel-dir-link")))
	must(os.Symlink("/proc/self/root", filepath.Join(ws, "proc-root")))
	must(os.Mkdir(filepath.Join(ws, "sub"), 0o755))
	must(os.Symlink("../../outside/secret", filepath.Join(ws, "sub", "deep-link")))

	paths := []string{
		"../outside/secret",
		"sub/../../outside/secret",
		filepath.Join(outside, "secret"), // absolute, outside the root
		"/etc/passwd",
		"abs-link",
		"rel-link",
		"dir-link/secret",
		"rel-dir-link/secret",
		"sub/deep-link",
		"proc-root" + outside + "/secret",
	}
	for _, p := range paths {
		if f, err := fsys.ReadFile(p, 1<<20); !errors.Is(err, execworld.ErrEscape) {
			t.Errorf("ReadFile(%q) = %v, %v; want ErrEscape", p, f, err)
		}
		if _, err := fsys.Stat(p); !errors.Is(err, execworld.ErrEscape) {
			t.Errorf("Stat(%q) error = %v; want ErrEscape", p, err)
		}
		if _, err := fsys.WriteFile(p, []byte("pwned"), nil); !errors.Is(err, execworld.ErrEscape) {
			t.Errorf("WriteFile(%q) error = %v; want ErrEscape", p, err)
		}
		if _, err := fsys.Edit(p, "TOP", "pwned", 1<<20, nil); !errors.Is(err, execworld.ErrEscape) {
			t.Errorf("Edit(%q) error = %v; want ErrEscape", p, err)
		}
	}
	for _, d := range []string{"..", "dir-link", "rel-dir-link", "/", outside} {
		if _, err := fsys.ListDir(d, 0); !errors.Is(err, execworld.ErrEscape) {
			t.Errorf("ListDir(%q) error = %v; want ErrEscape", d, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "TOP-SECRET" {
		t.Errorf("outside file changed to %q", b)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Errorf("outside directory has %d entries, want only secret", len(ents))
	}
}

// A workspace under /proc/<pid> holds magic links (root, cwd, fd/N).
// RESOLVE_NO_MAGICLINKS must refuse to follow them even though they sit
// beneath the root.
func TestMagicLinksAreRefused(t *testing.T) {
	fsys, err := execworld.OpenFS("/proc/self")
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	f, err := os.Open("/etc/hostname")
	if err != nil {
		t.Skip("no /etc/hostname to open through a magic link")
	}
	defer f.Close()
	for _, p := range []string{"root/etc/hostname", "cwd", fmt.Sprintf("fd/%d", f.Fd())} {
		if _, err := fsys.ReadFile(p, 1<<20); !errors.Is(err, execworld.ErrEscape) {
			t.Errorf("ReadFile(%q) error = %v; want ErrEscape", p, err)
		}
	}
	// A plain file beneath the root still reads: the refusal is about the
	// magic links, not about /proc.
	if _, err := fsys.ReadFile("status", 1<<20); err != nil {
		t.Errorf("ReadFile(status) = %v; want the file", err)
	}
}

// A symlink swapped between an inside and an outside target while reads
// and writes walk through it must never let one reach the outside.
func TestSymlinkSwapRace(t *testing.T) {
	fsys, ws, outside := layout(t)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(filepath.Join(ws, "inside"), 0o755))
	mustWrite(t, filepath.Join(ws, "inside", "secret"), "inside")
	must(os.Symlink("inside", filepath.Join(ws, "link")))

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var swaps atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		targets := []string{"inside", outside, "../outside"}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			tmp := filepath.Join(ws, "link.tmp")
			os.Remove(tmp)
			if os.Symlink(targets[i%len(targets)], tmp) == nil && os.Rename(tmp, filepath.Join(ws, "link")) == nil {
				swaps.Add(1)
			}
		}
	}()
	var inside, refused int
	for i := 0; i < 3000; i++ {
		f, err := fsys.ReadFile("link/secret", 1<<10)
		switch {
		case err == nil && string(f.Data) == "inside":
			inside++
		case err == nil:
			t.Fatalf("read through a swapped symlink returned %q", f.Data)
		default:
			refused++
		}
		fsys.WriteFile("link/secret", []byte("inside"), nil)
	}
	close(stop)
	wg.Wait()
	if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "TOP-SECRET" {
		t.Fatalf("outside file changed to %q", b)
	}
	if swaps.Load() == 0 || inside == 0 || refused == 0 {
		t.Fatalf("race not exercised: %d swaps, %d inside reads, %d refused", swaps.Load(), inside, refused)
	}
}

func TestNonRegularFiles(t *testing.T) {
	fsys, ws, _ := layout(t)
	if err := syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(ws, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.Mkdir(filepath.Join(ws, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The FIFO has no writer: a blocking open would hang the test here.
	for _, p := range []string{"fifo", "dir", "sock"} {
		if _, err := fsys.ReadFile(p, 1<<10); err == nil {
			t.Errorf("ReadFile(%q) succeeded; want an error", p)
		} else if p != "sock" && !errors.Is(err, execworld.ErrNotRegular) {
			t.Errorf("ReadFile(%q) error = %v; want ErrNotRegular", p, err)
		}
	}
	if _, err := fsys.WriteFile("fifo", []byte("x"), nil); !errors.Is(err, execworld.ErrNotRegular) {
		t.Errorf("WriteFile(fifo) error = %v; want ErrNotRegular", err)
	}
	if info, err := fsys.Lstat("fifo"); err != nil || info.Type != execworld.TypeOther {
		t.Errorf("Lstat(fifo) = %+v, %v; want type other", info, err)
	}
}

func TestReadFileCap(t *testing.T) {
	fsys, ws, _ := layout(t)
	mustWrite(t, filepath.Join(ws, "f"), strings.Repeat("x", 100))
	f, err := fsys.ReadFile("f", 100)
	if err != nil || len(f.Data) != 100 {
		t.Fatalf("ReadFile at exactly the cap = %v, %v; want all 100 bytes", f, err)
	}
	_, err = fsys.ReadFile("f", 99)
	var tl *execworld.TooLargeError
	if !errors.As(err, &tl) || tl.Size != 100 || tl.Limit != 99 {
		t.Fatalf("ReadFile over the cap error = %v; want TooLargeError{Size:100, Limit:99}", err)
	}
	if _, err := fsys.ReadFile("f", 0); err == nil {
		t.Fatal("ReadFile with a zero cap succeeded; want an error")
	}
}

func TestTextDetection(t *testing.T) {
	fsys, ws, _ := layout(t)
	cases := map[string]struct {
		data string
		text bool
	}{
		"plain":   {"héllo\nwörld\n", true},
		"empty":   {"", true},
		"nul":     {"abc\x00def", false},
		"latin1":  {"caf\xe9", false},
		"cut-utf": {"\xe2\x82", false},
	}
	for name, c := range cases {
		mustWrite(t, filepath.Join(ws, name), c.data)
		f, err := fsys.ReadFile(name, 1<<10)
		if err != nil {
			t.Fatal(err)
		}
		if f.Text != c.text {
			t.Errorf("ReadFile(%q).Text = %v, want %v", name, f.Text, c.text)
		}
		_, _, err = fsys.ReadText(name, 1<<10)
		if c.text != (err == nil) || (!c.text && !errors.Is(err, execworld.ErrNotText)) {
			t.Errorf("ReadText(%q) error = %v, want text=%v", name, err, c.text)
		}
	}
}

func TestWriteFileVersions(t *testing.T) {
	fsys, ws, _ := layout(t)
	absent := execworld.Version{}
	v1, err := fsys.WriteFile("a/b/f.txt", []byte("one"), &execworld.WriteOptions{Expect: &absent, MkdirAll: true, Perm: 0o600})
	if err != nil {
		t.Fatal(err)
	}
	info, err := fsys.Stat("a/b/f.txt")
	if err != nil || info.Version != v1 || info.Mode != 0o600 {
		t.Fatalf("Stat after write = %+v, %v; want version %v, mode 0600", info, err, v1)
	}
	if _, err := fsys.WriteFile("a/b/f.txt", []byte("x"), &execworld.WriteOptions{Expect: &absent}); !errors.Is(err, execworld.ErrVersionMismatch) {
		t.Fatalf("create over an existing file error = %v; want ErrVersionMismatch", err)
	}
	v2, err := fsys.WriteFile("a/b/f.txt", []byte("two"), &execworld.WriteOptions{Expect: &v1})
	if err != nil {
		t.Fatal(err)
	}
	if v2 == v1 {
		t.Fatal("version did not change on write")
	}
	// A writer holding the old version loses, and changes nothing.
	if _, err := fsys.WriteFile("a/b/f.txt", []byte("stale"), &execworld.WriteOptions{Expect: &v1}); !errors.Is(err, execworld.ErrVersionMismatch) {
		t.Fatalf("stale write error = %v; want ErrVersionMismatch", err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a/b/f.txt")); string(b) != "two" {
		t.Fatalf("content = %q, want two", b)
	}
	if fi, _ := os.Stat(filepath.Join(ws, "a/b/f.txt")); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode after rewrite = %v, want the existing 0600 kept", fi.Mode().Perm())
	}
	l, err := fsys.ListDir("a/b", 0)
	if err != nil || len(l.Entries) != 1 {
		t.Fatalf("ListDir after writes = %+v, %v; want only f.txt (no temp files left)", l, err)
	}
	p, err := execworld.ParseVersion(v2.String())
	if err != nil || p != v2 {
		t.Fatalf("ParseVersion(%q) = %v, %v", v2.String(), p, err)
	}
}

func TestWriteThroughInsideSymlink(t *testing.T) {
	fsys, ws, _ := layout(t)
	mustWrite(t, filepath.Join(ws, "target"), "old")
	if err := os.Symlink("target", filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.WriteFile("link", []byte("new"), nil); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "target")); string(b) != "new" {
		t.Fatalf("target = %q, want new", b)
	}
	if fi, _ := os.Lstat(filepath.Join(ws, "link")); fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatal("the symlink was replaced by a file")
	}
}

func TestEdit(t *testing.T) {
	fsys, ws, _ := layout(t)
	mustWrite(t, filepath.Join(ws, "f"), "alpha beta aaa")
	if _, err := fsys.Edit("f", "beta", "gamma", 1<<10, nil); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "f")); string(b) != "alpha gamma aaa" {
		t.Fatalf("after edit = %q", b)
	}
	for _, c := range []struct {
		old  string
		want int
	}{{"delta", 0}, {"a", 7}, {"aa", 2}} {
		_, err := fsys.Edit("f", c.old, "x", 1<<10, nil)
		var ee *execworld.EditError
		if !errors.As(err, &ee) || ee.Matches != c.want {
			t.Errorf("Edit(old=%q) error = %v; want EditError with %d matches", c.old, err, c.want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "f")); string(b) != "alpha gamma aaa" {
		t.Fatalf("failed edits changed the file to %q", b)
	}
	stale := execworld.Version{Dev: 1}
	if _, err := fsys.Edit("f", "gamma", "x", 1<<10, &execworld.WriteOptions{Expect: &stale}); !errors.Is(err, execworld.ErrVersionMismatch) {
		t.Fatalf("Edit with a stale version error = %v; want ErrVersionMismatch", err)
	}
	mustWrite(t, filepath.Join(ws, "bin"), "gamma\x00")
	if _, err := fsys.Edit("bin", "gamma", "x", 1<<10, nil); !errors.Is(err, execworld.ErrNotText) {
		t.Fatalf("Edit of a binary file error = %v; want ErrNotText", err)
	}
}

func TestListDirCap(t *testing.T) {
	fsys, ws, _ := layout(t)
	for i := 9; i >= 0; i-- {
		mustWrite(t, filepath.Join(ws, fmt.Sprintf("f%d", i)), strings.Repeat("x", i))
	}
	os.Mkdir(filepath.Join(ws, "d"), 0o755)
	l, err := fsys.ListDir(".", 3)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range l.Entries {
		got = append(got, fmt.Sprintf("%s:%s:%d", e.Name, e.Type, e.Size))
	}
	want := "d:dir:" + fmt.Sprint(l.Entries[0].Size) + " f0:file:0 f1:file:1"
	if strings.Join(got, " ") != want || l.Total != 11 || !l.Truncated {
		t.Fatalf("ListDir(., 3) = %v total %d truncated %v; want %s total 11 truncated", got, l.Total, l.Truncated, want)
	}
}

func TestAbsolutePathInsideIsAccepted(t *testing.T) {
	fsys, ws, _ := layout(t)
	mustWrite(t, filepath.Join(ws, "f"), "hi")
	f, err := fsys.ReadFile(filepath.Join(fsys.Root(), "f"), 10)
	if err != nil || !bytes.Equal(f.Data, []byte("hi")) {
		t.Fatalf("ReadFile(absolute inside) = %v, %v", f, err)
	}
}

func TestClosedFS(t *testing.T) {
	fsys, _, _ := layout(t)
	if err := fsys.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Close(); !errors.Is(err, execworld.ErrClosed) {
		t.Fatalf("second Close = %v; want ErrClosed", err)
	}
	if _, err := fsys.Stat("."); !errors.Is(err, execworld.ErrClosed) {
		t.Fatalf("Stat after Close = %v; want ErrClosed", err)
	}
}
