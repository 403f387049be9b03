package main

import (
	"os"
	"testing"

	"github.com/spf13/cobra/doc"
)

// TestGenManPages writes dsh's man pages, generated from the command
// tree, into $DSH_MAN_DIR (make man). It lives in a test so that the man
// generator never enters the dsh binary.
func TestGenManPages(t *testing.T) {
	dir := os.Getenv("DSH_MAN_DIR")
	if dir == "" {
		t.Skip("set DSH_MAN_DIR (make man) to generate the man pages")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	root := newRootCmd()
	root.DisableAutoGenTag = true
	hdr := &doc.GenManHeader{Title: "DSH", Section: "1", Source: "dsh " + version}
	if err := doc.GenManTree(root, hdr, dir); err != nil {
		t.Fatal(err)
	}
}
