package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// A source outside the workspace is read-only unless :rw says so; one in
// the workspace is writable; the source is bound by its real path.
func TestUserBindModes(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	ref := filepath.Join(dir, "ref")
	for _, d := range []string{ws, ref, filepath.Join(ws, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(ref, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		arg, src, mode string
	}{
		{ref + ":/mnt", ref, "ro"},
		{ref + ":/mnt:ro", ref, "ro"},
		{ref + ":/mnt:rw", ref, "rw"},
		{link + ":/mnt", ref, "ro"},
		{filepath.Join(ws, "sub") + ":/mnt", filepath.Join(ws, "sub"), "rw"},
		{filepath.Join(ws, "sub") + ":/mnt:ro", filepath.Join(ws, "sub"), "ro"},
	} {
		m, err := UserBind(tc.arg, ws)
		if err != nil {
			t.Errorf("UserBind(%q): %v", tc.arg, err)
			continue
		}
		if m.Type != "bind" || m.Source != tc.src || m.Destination != "/mnt" || !slices.Equal(m.Options, []string{"rbind", tc.mode}) {
			t.Errorf("UserBind(%q) = %+v, want a bind of %s at /mnt, %s", tc.arg, m, tc.src, tc.mode)
		}
	}
}

// Every refusal names the value and says what to do.
func TestUserBindRefused(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ arg, want string }{
		{dir, "is not SRC:DST[:ro|rw]"},
		{dir + ":/a:/b:c", "is not SRC:DST[:ro|rw]"},
		{"rel:/mnt", `the source "rel" is not an absolute path`},
		{dir + ":mnt", `the destination "mnt" is not an absolute path`},
		{dir + ":/mnt:rx", `mode "rx" is neither ro`},
		{dir + "/missing:/mnt", "cannot be bound"},
		{dir + ":/", "would replace the world's whole root"},
		{dir + ":/proc", "is in /proc"},
		{dir + ":/dev/shm", "is in /dev"},
		{dir + ":/sys/fs/cgroup", "is in /sys"},
		{dir + ":/.dsh/x", "is in /.dsh"},
		{dir + ":" + ws, "would cover the workspace"},
		{dir + ":" + ws + "/sub", "would cover the workspace"},
		{dir + ":" + dir, "would cover the workspace"},
		{"/etc:/mnt:rw", "system location /etc"},
		{"/usr/lib:/mnt:rw", "system location /usr"},
		{"/proc/self:/mnt:rw", "cannot be writable"},
	} {
		_, err := UserBind(tc.arg, ws)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.arg) {
			t.Errorf("UserBind(%q) = %v, want an error naming it and saying %q", tc.arg, err, tc.want)
		}
	}
	// Read-only, a system location is fine.
	if _, err := UserBind("/etc:/mnt/etc", ws); err != nil {
		t.Errorf("UserBind(/etc:/mnt/etc) read-only: %v", err)
	}
}

// Validate refuses a Spec mount over the world's kernel interfaces and a
// root view it does not know, whoever made the Spec.
func TestValidateViews(t *testing.T) {
	ws := t.TempDir()
	for _, tc := range []struct {
		mutate func(*Spec)
		field  string
	}{
		{func(s *Spec) { s.Root = "tiny" }, "Spec.Root"},
		{func(s *Spec) {
			s.Mounts = append(s.Mounts, specs.Mount{Type: "tmpfs", Source: "tmpfs", Destination: "/dev/shm"})
		}, "Spec.Mounts[1]"},
		{func(s *Spec) {
			s.Mounts = append(s.Mounts, specs.Mount{Type: "bind", Source: ws, Destination: "/proc/sys"})
		}, "Spec.Mounts[1]"},
	} {
		s := DefaultSpec(ws)
		tc.mutate(s)
		if _, err := Validate(s); err == nil || !strings.HasPrefix(err.Error(), tc.field) {
			t.Errorf("Validate = %v, want an error of %s", err, tc.field)
		}
	}
	for _, root := range []string{"", RootHost, RootMinimal} {
		s := DefaultSpec(ws)
		s.Root = root
		if _, err := Validate(s); err != nil {
			t.Errorf("Validate with Root %q: %v", root, err)
		}
	}
}

func TestCheckMaskArg(t *testing.T) {
	for m, ok := range map[string]bool{"/srv/x": true, "~/.config/gh": true, "rel": false, "~x": false, "/a/../b": false} {
		if err := CheckMaskArg(m); (err == nil) != ok {
			t.Errorf("CheckMaskArg(%q) = %v, want ok %v", m, err, ok)
		}
	}
}
