package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/internal/testenv"
)

func mounts(ws string, p *Protection) []string {
	var out []string
	for _, m := range p.Mounts {
		kind := "pin"
		if m.ReadOnly {
			kind = "ro"
		}
		out = append(out, kind+" "+strings.TrimPrefix(m.Path, ws+"/"))
	}
	return out
}

// In a repository, existing paths are bound read-only, .git is pinned,
// and the missing ones get placeholders, which Close removes.
func TestPrepareProtectedRepository(t *testing.T) {
	ws := t.TempDir()
	for _, d := range []string{".git/hooks", ".git/info", ".git/objects"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{".git/config", "dsh.yaml"} {
		if err := os.WriteFile(filepath.Join(ws, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, err := PrepareProtected(ws, DefaultProtected, nil, false, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ro .agents", "ro .dsh", "ro .envrc", "pin .git", "ro .vscode", "ro dsh.yaml", "ro .git/commondir", "ro .git/config", "ro .git/hooks", "ro .git/info"}
	if got := mounts(ws, p); !reflect.DeepEqual(got, want) {
		t.Errorf("mounts %q, want %q", got, want)
	}
	for f, dir := range map[string]bool{".agents": true, ".dsh": true, ".vscode": true, ".envrc": false} {
		fi, err := os.Lstat(filepath.Join(ws, f))
		if err != nil || fi.IsDir() != dir || !fi.IsDir() && fi.Size() != 0 {
			t.Errorf("placeholder %s: %v, %v (want an empty directory: %v)", f, fi, err, dir)
		}
	}
	// git dies on an empty commondir; "." is the repository itself.
	if b, err := os.ReadFile(filepath.Join(ws, ".git/commondir")); err != nil || string(b) != ".\n" {
		t.Errorf(".git/commondir placeholder: %q, %v", b, err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := testenv.DirNames(t, filepath.Join(ws, ".git")), []string{"config", "hooks", "info", "objects"}; !reflect.DeepEqual(got, want) {
		t.Errorf("after Close .git holds %q, want %q", got, want)
	}
	if got, want := testenv.DirNames(t, ws), []string{".git", "dsh.yaml"}; !reflect.DeepEqual(got, want) {
		t.Errorf("after Close the workspace holds %q, want %q", got, want)
	}
}

// In an empty workspace a missing .git becomes one read-only
// placeholder that covers config, hooks and info.
func TestPrepareProtectedEmpty(t *testing.T) {
	ws := t.TempDir()
	p, err := PrepareProtected(ws, DefaultProtected, nil, false, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ro .agents", "ro .dsh", "ro .envrc", "ro .git", "ro .vscode", "ro dsh.yaml"}
	if got := mounts(ws, p); !reflect.DeepEqual(got, want) {
		t.Errorf("mounts %q, want %q", got, want)
	}
	if got := testenv.DirNames(t, filepath.Join(ws, ".git")); len(got) != 0 {
		t.Errorf("the .git placeholder holds %q", got)
	}
	p.Close()
	if got := testenv.DirNames(t, ws); len(got) != 0 {
		t.Errorf("after Close the workspace holds %q", got)
	}
}

// Close leaves a placeholder that is no longer empty, and one another
// world on the same workspace still holds; that world, which found it
// as it was made, adopts it and removes it when it closes last.
func TestPrepareProtectedCloseLeaves(t *testing.T) {
	ws := t.TempDir()
	a, err := PrepareProtected(ws, []string{"dsh.yaml", ".dsh/"}, nil, false, "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := PrepareProtected(ws, []string{".dsh/"}, nil, false, "")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, "dsh.yaml"), []byte("written by the user meanwhile"), 0o644)
	a.Close()
	if got, want := testenv.DirNames(t, ws), []string{".dsh", "dsh.yaml"}; !reflect.DeepEqual(got, want) {
		t.Errorf("after the first Close the workspace holds %q, want %q", got, want)
	}
	b.Close()
	if got, want := testenv.DirNames(t, ws), []string{"dsh.yaml"}; !reflect.DeepEqual(got, want) {
		t.Errorf("after the second Close the workspace holds %q, want %q (the placeholder it adopted gone, the user's file kept)", got, want)
	}
}

// A symbolic link anywhere on a protected path is refused, naming the
// entry and the link; nothing is left behind.
func TestPrepareProtectedSymlink(t *testing.T) {
	for _, link := range []string{"dsh.yaml", ".git"} {
		ws := t.TempDir()
		if err := os.Symlink("/etc", filepath.Join(ws, link)); err != nil {
			t.Fatal(err)
		}
		_, err := PrepareProtected(ws, DefaultProtected, nil, false, "")
		var se *SpecError
		if !errors.As(err, &se) || !strings.HasPrefix(se.Field, "Protected[") || !strings.Contains(se.Msg, link+" in the workspace") || !strings.Contains(se.Msg, "symbolic link") {
			t.Errorf("%s a link: %v", link, err)
		}
		if got := testenv.DirNames(t, ws); !reflect.DeepEqual(got, []string{link}) {
			t.Errorf("%s a link: the workspace holds %q after the refusal", link, got)
		}
	}
}

// A .git file (a worktree's) is bound read-only itself: nothing can be
// below it, and it cannot be replaced by a directory.
func TestPrepareProtectedGitFile(t *testing.T) {
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, ".git"), []byte("gitdir: /elsewhere\n"), 0o644)
	p, err := PrepareProtected(ws, []string{".git/config", ".git/hooks/"}, nil, false, "")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if got, want := mounts(ws, p), []string{"ro .git"}; !reflect.DeepEqual(got, want) {
		t.Errorf("mounts %q, want %q", got, want)
	}
}

// Every directory between the workspace and a mask inside it is pinned,
// so that no world can move the mask away from its path; the walk stops
// at a link or a missing directory, and masks elsewhere pin nothing.
func TestPrepareProtectedPinsMasksParents(t *testing.T) {
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, ".config/dsh"), 0o700)
	os.MkdirAll(filepath.Join(ws, "real/x/y"), 0o700)
	os.Symlink("real", filepath.Join(ws, "link"))
	masks := []string{ws + "/.config/dsh", ws + "/link/x/y", ws + "/missing/a/b", "/etc/shadow", "~/.ssh"}
	p, err := PrepareProtected(ws, nil, masks, false, "")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// link/x/y resolves to real/x/y: its parents real and real/x.
	if got, want := mounts(ws, p), []string{"pin .config", "pin real", "pin real/x"}; !reflect.DeepEqual(got, want) {
		t.Errorf("mounts %q, want %q", got, want)
	}
	p2, err := PrepareProtected(ws, []string{".config/"}, masks[:1], false, "")
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	if got, want := mounts(ws, p2), []string{"ro .config"}; !reflect.DeepEqual(got, want) {
		t.Errorf("a read-only parent: mounts %q, want %q", got, want)
	}
}

func TestCheckProtected(t *testing.T) {
	for _, bad := range []string{"", ".", "/", "/etc/passwd", "../x", "..", "a/../b", "a//b", "./a", "a/./b", "a//"} {
		if err := CheckProtected([]string{bad}); !errors.Is(err, ErrInvalidSpec) {
			t.Errorf("%q accepted: %v", bad, err)
		}
	}
	if err := CheckProtected(append([]string{"a/b/", "x"}, DefaultProtected...)); err != nil {
		t.Error(err)
	}
	if _, err := Validate(&Spec{Workspace: t.TempDir(), Protected: []string{"../x"}}); err == nil || !strings.Contains(err.Error(), "Spec.Protected[0]") {
		t.Errorf("Validate: %v", err)
	}
}

// A directory this process may not write gets no placeholder when the
// world has this process's ids (it cannot create anything there either),
// and is an error naming the path and the fix otherwise.
func TestPrepareProtectedUnwritable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes every directory; the unprivileged native leg covers this")
	}
	ws := t.TempDir()
	os.Chmod(ws, 0o555)
	defer os.Chmod(ws, 0o755)
	p, err := PrepareProtected(ws, DefaultProtected, nil, true, "")
	if err != nil || len(p.Mounts) != 0 {
		t.Errorf("world with the caller's ids: %v, %v", p, err)
	}
	if _, err := PrepareProtected(ws, DefaultProtected, nil, false, ""); err == nil || !strings.Contains(err.Error(), "placeholder") || !strings.Contains(err.Error(), "write access to the workspace") {
		t.Errorf("another world identity: %v", err)
	}
}
