package changes

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// layers makes a workspace (lower) and an upper layer by hand, as
// overlayfs would leave them after the world's writes.
func layers(t *testing.T) (lower, upper string) {
	t.Helper()
	base := t.TempDir()
	lower, upper = filepath.Join(base, "lower"), filepath.Join(base, "upper")
	for _, d := range []string{lower, upper} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return lower, upper
}

func write(t *testing.T, p, data string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func whiteout(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mknod(p, unix.S_IFCHR|0o600, 0); err != nil {
		t.Fatalf("making the whiteout %s: %v", p, err)
	}
}

func opaque(t *testing.T, dir, ns string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(dir, ns+".overlay.opaque", []byte("y"), 0); err != nil {
		t.Fatalf("marking %s opaque: %v", dir, err)
	}
}

// summary renders a set as "kind type path" lines.
func summary(s *Set) string {
	var b strings.Builder
	for _, c := range s.Changes {
		b.WriteString(string(c.Kind) + " " + c.Type + " " + c.Path)
		if c.Target != "" {
			b.WriteString(" -> " + c.Target)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestComputeFindsEveryKindOfChange covers added, modified and deleted
// files, a deleted directory, a directory renamed by copy and delete
// (what mv does when overlayfs refuses the rename), an opaque directory,
// symlinks, mode changes, and copy-ups that change nothing.
func TestComputeFindsEveryKindOfChange(t *testing.T) {
	for _, ns := range []string{"user", "trusted"} {
		t.Run(ns, func(t *testing.T) {
			lower, upper := layers(t)
			write(t, filepath.Join(lower, "keep.txt"), "same", 0o644)
			write(t, filepath.Join(lower, "edit.txt"), "old", 0o644)
			write(t, filepath.Join(lower, "gone.txt"), "bye", 0o644)
			write(t, filepath.Join(lower, "olddir/a"), "a", 0o644)
			write(t, filepath.Join(lower, "olddir/sub/b"), "b", 0o644)
			write(t, filepath.Join(lower, "redo/x"), "x", 0o644)
			write(t, filepath.Join(lower, "redo/y"), "y", 0o644)
			write(t, filepath.Join(lower, "chmod.sh"), "#!/bin/sh\n", 0o644)
			write(t, filepath.Join(lower, "src/touched.go"), "package x", 0o644)
			if err := os.Symlink("keep.txt", filepath.Join(lower, "link")); err != nil {
				t.Fatal(err)
			}

			write(t, filepath.Join(upper, "keep.txt"), "same", 0o644)        // copied up, unchanged
			write(t, filepath.Join(upper, "edit.txt"), "newer", 0o644)       // modified
			write(t, filepath.Join(upper, "new/deep/f"), "fff", 0o600)       // added, with its directories
			whiteout(t, filepath.Join(upper, "gone.txt"))                    // deleted file
			whiteout(t, filepath.Join(upper, "olddir"))                      // renamed directory: deleted ...
			write(t, filepath.Join(upper, "newdir/a"), "a", 0o644)           // ... and added under its new name
			write(t, filepath.Join(upper, "newdir/sub/b"), "b", 0o644)       //
			opaque(t, filepath.Join(upper, "redo"), ns)                      // rm -r redo; mkdir redo
			write(t, filepath.Join(upper, "redo/y"), "y2", 0o644)            // y rewritten, x gone
			write(t, filepath.Join(upper, "chmod.sh"), "#!/bin/sh\n", 0o755) // mode change only
			write(t, filepath.Join(upper, "src/touched.go"), "package x", 0o644)
			if err := os.Symlink("edit.txt", filepath.Join(upper, "link")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("/etc/passwd", filepath.Join(upper, "out")); err != nil {
				t.Fatal(err)
			}
			whiteout(t, filepath.Join(upper, "never-existed"))

			s, err := Compute(upper, lower)
			if err != nil {
				t.Fatal(err)
			}
			want := `modified file chmod.sh
modified file edit.txt
deleted file gone.txt
modified symlink link -> edit.txt
added dir new
added dir new/deep
added file new/deep/f
added dir newdir
added file newdir/a
added dir newdir/sub
added file newdir/sub/b
deleted dir olddir
added symlink out -> /etc/passwd
deleted file redo/x
modified file redo/y
`
			if got := summary(s); got != want {
				t.Errorf("change set:\n%s\nwant:\n%s", got, want)
			}
			if s.Added != 8 || s.Modified != 4 || s.Deleted != 3 {
				t.Errorf("counts added %d modified %d deleted %d, want 8 4 3", s.Added, s.Modified, s.Deleted)
			}
			if want := int64(len("#!/bin/sh\n") + len("newer") + 3 + 1 + 1 + 2); s.Bytes != want {
				t.Errorf("Bytes = %d, want %d", s.Bytes, want)
			}
			for _, c := range s.Changes {
				if c.Path == "new/deep/f" && (c.Mode != "0600" || c.Size != 3) {
					t.Errorf("new/deep/f: mode %s size %d, want 0600 and 3", c.Mode, c.Size)
				}
			}
			b, err := json.Marshal(s)
			if err != nil || !strings.Contains(string(b), `{"path":"gone.txt","kind":"deleted","type":"file","size":3}`) {
				t.Errorf("JSON %s (%v) lacks the deletion of gone.txt", b, err)
			}
		})
	}
}

// TestComputeReadsXattrWhiteouts covers whiteouts that are files with
// the overlay.whiteout xattr (Linux 6.7 and newer).
func TestComputeReadsXattrWhiteouts(t *testing.T) {
	lower, upper := layers(t)
	write(t, filepath.Join(lower, "f"), "f", 0o644)
	write(t, filepath.Join(upper, "f"), "", 0o644)
	if err := unix.Setxattr(filepath.Join(upper, "f"), "user.overlay.whiteout", nil, 0); err != nil {
		t.Fatal(err)
	}
	s, err := Compute(upper, lower)
	if err != nil {
		t.Fatal(err)
	}
	if got := summary(s); got != "deleted file f\n" {
		t.Errorf("change set %q, want the deletion of f", got)
	}
}

// TestComputeRefusesRedirects: an upper layer with a redirect (a
// directory renamed with redirect_dir) is not dsh's and would be misread.
func TestComputeRefusesRedirects(t *testing.T) {
	lower, upper := layers(t)
	if err := os.Mkdir(filepath.Join(upper, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(filepath.Join(upper, "d"), "user.overlay.redirect", []byte("/e"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := Compute(upper, lower); err == nil || !strings.Contains(err.Error(), "user.overlay.redirect") {
		t.Errorf("Compute of an upper layer with a redirect = %v, want an error naming the xattr", err)
	}
}

// TestComputeStaysInTheWorkspace: a symlink in the workspace that leads
// outside is never followed to judge a change.
func TestComputeStaysInTheWorkspace(t *testing.T) {
	lower, upper := layers(t)
	outside := t.TempDir()
	write(t, filepath.Join(outside, "f"), "outside", 0o644)
	if err := os.Symlink(outside, filepath.Join(lower, "esc")); err != nil {
		t.Fatal(err)
	}
	opaque(t, filepath.Join(upper, "esc"), "user")
	if _, err := Compute(upper, lower); err != nil {
		t.Fatal(err)
	}
	s, err := Compute(upper, lower)
	if err != nil {
		t.Fatal(err)
	}
	if got := summary(s); got != "modified dir esc\n" {
		t.Errorf("change set %q, want esc replaced by a directory and nothing of %s", got, outside)
	}
}

func TestApply(t *testing.T) {
	lower, upper := layers(t)
	write(t, filepath.Join(lower, "edit.txt"), "old", 0o644)
	write(t, filepath.Join(lower, "gone.txt"), "bye", 0o644)
	write(t, filepath.Join(lower, "olddir/a"), "a", 0o644)
	write(t, filepath.Join(lower, ".git/config"), "[core]\n", 0o644)
	write(t, filepath.Join(lower, ".git/HEAD"), "ref: refs/heads/main\n", 0o644)
	write(t, filepath.Join(lower, "dir2file/x"), "x", 0o644)

	write(t, filepath.Join(upper, "edit.txt"), "new", 0o644)
	whiteout(t, filepath.Join(upper, "gone.txt"))
	whiteout(t, filepath.Join(upper, "olddir"))
	write(t, filepath.Join(upper, "newdir/a"), "a", 0o644)
	write(t, filepath.Join(upper, "suid"), "#!/bin/sh\n", 0o755)
	if err := unix.Chmod(filepath.Join(upper, "suid"), 0o6755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(upper, ".git/config"), "[core]\n\tfsmonitor = evil\n", 0o644)
	write(t, filepath.Join(upper, ".git/hooks/pre-commit"), "evil", 0o755)
	write(t, filepath.Join(upper, ".git/HEAD"), "ref: refs/heads/dev\n", 0o644)
	write(t, filepath.Join(upper, "dsh.yaml"), "sandbox: {limits: {off: true}}\n", 0o644)
	write(t, filepath.Join(upper, "dir2file"), "now a file", 0o644)
	write(t, filepath.Join(upper, "sub/.git/config"), "[core]\n\tfsmonitor = evil\n", 0o644)
	if err := os.Symlink("/etc", filepath.Join(upper, "etc")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(upper, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(filepath.Join(upper, "newdir/a"), "user.dsh-test", []byte("x"), 0); err != nil {
		t.Fatal(err)
	}

	s, err := Compute(upper, lower)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Apply(lower, []string{".git/config", ".git/hooks", "dsh.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(lower, p))
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(b)
	}
	for p, want := range map[string]string{
		"edit.txt": "new", "newdir/a": "a", ".git/config": "[core]\n", ".git/HEAD": "ref: refs/heads/dev\n",
		"dir2file": "now a file",
	} {
		if got := read(p); got != want {
			t.Errorf("%s after Apply = %q, want %q", p, got, want)
		}
	}
	for _, p := range []string{"gone.txt", "olddir", ".git/hooks", "dsh.yaml", "fifo", "sub/.git"} {
		if _, err := os.Lstat(filepath.Join(lower, p)); !os.IsNotExist(err) {
			t.Errorf("%s after Apply: %v, want it absent", p, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(lower, "suid")); err != nil || fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 || fi.Mode().Perm() != 0o755 {
		t.Errorf("suid after Apply: %v %v, want 0755 without setuid or setgid", fi.Mode(), err)
	}
	if len(res.Stripped) != 1 || res.Stripped[0] != "suid" {
		t.Errorf("Stripped = %v, want [suid]", res.Stripped)
	}
	if target, err := os.Readlink(filepath.Join(lower, "etc")); err != nil || target != "/etc" {
		t.Errorf("symlink etc after Apply: %q %v", target, err)
	}
	if sz, err := unix.Getxattr(filepath.Join(lower, "newdir/a"), "user.dsh-test", make([]byte, 8)); err == nil {
		t.Errorf("newdir/a kept an xattr of %d bytes; Apply copies none", sz)
	}
	skipped := map[string]string{}
	for _, k := range res.Skipped {
		skipped[k.Path] = k.Why
	}
	for _, p := range []string{".git/config", ".git/hooks", ".git/hooks/pre-commit", "dsh.yaml", "fifo", "sub/.git", "sub/.git/config"} {
		if skipped[p] == "" {
			t.Errorf("%s not reported skipped (skipped: %v)", p, res.Skipped)
		}
	}
}

// TestApplyNeverLeavesTheWorkspace: a change below a symlink, even one
// the workspace itself has, is not written through it.
func TestApplyNeverLeavesTheWorkspace(t *testing.T) {
	lower, upper := layers(t)
	outside := t.TempDir()
	write(t, filepath.Join(upper, "esc/f"), "planted", 0o644)
	s, err := Compute(upper, lower)
	if err != nil {
		t.Fatal(err)
	}
	// The workspace changed since: esc is now a symlink out of it.
	if err := os.Symlink(outside, filepath.Join(lower, "esc")); err != nil {
		t.Fatal(err)
	}
	res, err := s.Apply(lower, nil)
	if err != nil {
		t.Logf("Apply: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "f")); !os.IsNotExist(err) {
		t.Errorf("Apply wrote %s outside the workspace (%v)", filepath.Join(outside, "f"), err)
	}
	if res != nil {
		t.Logf("result: %+v", res)
	}
}

func TestKeep(t *testing.T) {
	lower, upper := layers(t)
	write(t, filepath.Join(lower, "gone"), "x", 0o644)
	whiteout(t, filepath.Join(upper, "gone"))
	write(t, filepath.Join(upper, "d/f"), "data", 0o755)
	if err := unix.Chmod(filepath.Join(upper, "d/f"), 0o4755); err != nil {
		t.Fatal(err)
	}
	opaque(t, filepath.Join(upper, "o"), "user")
	s, err := Compute(upper, lower)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "kept")
	if err := s.Keep(dir); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(dir, "gone"), &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFCHR || st.Rdev != 0 {
		t.Errorf("kept whiteout: mode %o rdev %d %v, want a 0/0 character device", st.Mode, st.Rdev, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "d/f")); err != nil || string(b) != "data" {
		t.Errorf("kept d/f = %q %v", b, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "d/f")); err != nil || fi.Mode()&os.ModeSetuid != 0 {
		t.Errorf("kept d/f mode %v %v, want no setuid", fi.Mode(), err)
	}
	if sz, err := unix.Getxattr(filepath.Join(dir, "o"), "user.overlay.opaque", make([]byte, 4)); err != nil || sz != 1 {
		t.Errorf("kept o is not opaque: %d %v", sz, err)
	}
	again, err := Compute(dir, lower)
	if err != nil || summary(again) != summary(s) {
		t.Errorf("the kept layer's change set = %q %v, want %q", summary(again), err, summary(s))
	}
	if err := s.Keep(dir); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("Keep into a non-empty directory = %v, want a refusal", err)
	}
}
