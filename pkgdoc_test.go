package dsh_test

import (
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// packageComments maps each package directory under root to the files
// that carry a package comment. Only files of the build are read, so a
// generator behind a "//go:build ignore" line does not count.
func packageComments(t *testing.T, root string) map[string][]string {
	t.Helper()
	docs := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
			return filepath.SkipDir
		}
		pkg, err := build.ImportDir(path, 0)
		if err != nil || len(pkg.GoFiles) == 0 {
			return nil // no buildable Go files here
		}
		docs[path] = nil
		for _, name := range pkg.GoFiles {
			f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(path, name), nil, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				return err
			}
			if f.Doc != nil && strings.TrimSpace(f.Doc.Text()) != "" {
				docs[path] = append(docs[path], name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// docProblems lists packages with no package comment or more than one.
func docProblems(docs map[string][]string) []string {
	var bad []string
	for dir, files := range docs {
		switch len(files) {
		case 1:
		case 0:
			bad = append(bad, dir+": no package comment (add one, in doc.go if it is long)")
		default:
			sort.Strings(files)
			bad = append(bad, dir+": package comment in several files: "+strings.Join(files, ", "))
		}
	}
	sort.Strings(bad)
	return bad
}

func TestEveryPackageHasOneComment(t *testing.T) {
	for _, p := range docProblems(packageComments(t, ".")) {
		t.Error(p)
	}
}

// TestPackageCommentCheckFails proves the check catches both mistakes.
func TestPackageCommentCheckFails(t *testing.T) {
	root := t.TempDir()
	write := func(rel, body string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("none/a.go", "package none\n")
	write("two/a.go", "// Package two is documented here.\npackage two\n")
	write("two/b.go", "// Package two is documented again.\npackage two\n")
	write("good/doc.go", "// Package good is fine.\npackage good\n")
	write("good/x.go", "package good\n")
	write("good/gen.go", "//go:build ignore\n\n// Command gen is not part of the build.\npackage main\n")
	got := docProblems(packageComments(t, root))
	if len(got) != 2 || !strings.Contains(got[0], "none: no package comment") || !strings.Contains(got[1], "two: package comment in several files: a.go, b.go") {
		t.Errorf("docProblems() = %q, want the none and two packages reported", got)
	}
}
