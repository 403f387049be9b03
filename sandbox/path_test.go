package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"a", "b", "c/sub"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(writeFile(filepath.Join(dir, "a/tool"), "#!/bin/sh\n", 0o644)) // not executable
	must(writeFile(filepath.Join(dir, "b/tool"), "#!/bin/sh\n", 0o755))
	must(writeFile(filepath.Join(dir, "a/only"), "#!/bin/sh\n", 0o644))
	must(os.Mkdir(filepath.Join(dir, "b/dirtool"), 0o755))
	must(writeFile(filepath.Join(dir, "c/sub/rel"), "#!/bin/sh\n", 0o755))

	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, tc := range []struct {
		file, path, dir string
		want            string
		err             error
	}{
		{"tool", a + ":" + b, "", filepath.Join(b, "tool"), nil}, // skips the non-executable match
		{"only", a + ":" + b, "", "", ErrNotExecutable},          // only a non-executable match
		{"dirtool", b, "", "", ErrNotExecutable},                 // a directory
		{"missing", a + ":" + b, "", "", ErrNotFound},            //
		{"tool", "", "", "", ErrNotFound},                        // empty PATH: the cwd, which has none
		{"rel", "sub", filepath.Join(dir, "c"), "sub/rel", nil},  // relative PATH entry, relative to dir
		{"rel", ":", filepath.Join(dir, "c/sub"), "./rel", nil},  // empty entry is the working directory
		{"sub/rel", "", filepath.Join(dir, "c"), "sub/rel", nil}, // a slash: no search, relative to dir
		{"./sub/rel", "/nonexistent", filepath.Join(dir, "c"), "./sub/rel", nil},
		{filepath.Join(b, "tool"), "", "", filepath.Join(b, "tool"), nil}, // absolute
		{filepath.Join(a, "tool"), b, "", "", ErrNotExecutable},           // absolute: no search
	} {
		got, err := LookPath(tc.file, tc.path, tc.dir)
		if !errors.Is(err, tc.err) || got != tc.want {
			t.Errorf("LookPath(%q, %q, %q) = %q, %v; want %q, %v", tc.file, tc.path, tc.dir, got, err, tc.want, tc.err)
		}
	}
}

func TestMergeEnv(t *testing.T) {
	got := MergeEnv([]string{"A=1", "B=2", "A=3", "C", "B=", "D=4"}, []string{"D=5", "E=6"})
	want := []string{"A=3", "B=", "C", "D=5", "E=6"}
	if !slices.Equal(got, want) {
		t.Fatalf("MergeEnv = %q, want %q", got, want)
	}
	if v, _ := LookupEnv([]string{"PATH=/a", "PATH=/b"}, "PATH"); v != "/b" {
		t.Errorf("LookupEnv = %q, want the last entry /b", v)
	}
	if p := PathOf([]string{"HOME=/tmp"}); p != DefaultPath {
		t.Errorf("PathOf without PATH = %q, want DefaultPath", p)
	}
}

func writeFile(name, content string, mode os.FileMode) error {
	if err := os.WriteFile(name, []byte(content), mode); err != nil {
		return err
	}
	return os.Chmod(name, mode) // whatever the umask
}
