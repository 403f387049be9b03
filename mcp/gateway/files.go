package gateway

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-dev/dsh/execworld"
)

// ReadInput is read_file's input.
type ReadInput struct {
	Path      string `json:"path" jsonschema:"file path relative to the workspace, or a spill path exec returned"`
	StartLine int    `json:"start_line,omitempty" jsonschema:"first line to return, 1-based (default 1)"`
	EndLine   int    `json:"end_line,omitempty" jsonschema:"last line to return, inclusive (default: the last line)"`
	MaxBytes  int64  `json:"max_bytes,omitempty" jsonschema:"refuse files larger than this many bytes (default and maximum: the server's read cap)"`
}

// ReadOutput is read_file's result.
type ReadOutput struct {
	Path       string `json:"path"`
	Content    string `json:"content" jsonschema:"the text (the requested lines), or base64 when encoding says so"`
	Encoding   string `json:"encoding,omitempty" jsonschema:"base64 for a binary file (not UTF-8, or has a NUL byte)"`
	Binary     bool   `json:"binary"`
	Size       int64  `json:"size" jsonschema:"file size in bytes"`
	TotalLines int    `json:"total_lines,omitempty" jsonschema:"lines in the whole file (text only)"`
	StartLine  int    `json:"start_line,omitempty"`
	EndLine    int    `json:"end_line,omitempty"`
	Version    string `json:"version,omitempty" jsonschema:"pass to write_file or edit_file as expected_version to refuse overwriting a newer change"`
}

// WriteInput is write_file's input.
type WriteInput struct {
	Path            string `json:"path" jsonschema:"file path relative to the workspace"`
	Content         string `json:"content" jsonschema:"the whole new content"`
	ExpectedVersion string `json:"expected_version,omitempty" jsonschema:"the version read_file returned; the write fails if the file changed since. \"absent\": the file must not exist yet"`
	CreateDirs      bool   `json:"create_dirs,omitempty" jsonschema:"create missing parent directories"`
}

// WriteOutput is write_file's and edit_file's result.
type WriteOutput struct {
	Path    string `json:"path"`
	Bytes   int    `json:"bytes"`
	Version string `json:"version" jsonschema:"the file's new version"`
}

// EditInput is edit_file's input.
type EditInput struct {
	Path            string `json:"path" jsonschema:"file path relative to the workspace"`
	OldText         string `json:"old_text" jsonschema:"text to replace: must occur exactly once, byte for byte"`
	NewText         string `json:"new_text" jsonschema:"replacement text"`
	ExpectedVersion string `json:"expected_version,omitempty" jsonschema:"the version read_file returned; the edit fails if the file changed since"`
}

// ListInput is list_dir's input.
type ListInput struct {
	Path  string `json:"path,omitempty" jsonschema:"directory relative to the workspace (default: the workspace root)"`
	Limit int    `json:"limit,omitempty" jsonschema:"most entries to return (default and maximum 1000)"`
}

// ListOutput is list_dir's result.
type ListOutput struct {
	Path      string      `json:"path"`
	Entries   []ListEntry `json:"entries"`
	Total     int         `json:"total" jsonschema:"entries in the directory"`
	Truncated bool        `json:"truncated" jsonschema:"entries were left out (see limit)"`
}

// ListEntry is one directory entry.
type ListEntry struct {
	Name string `json:"name"`
	Type string `json:"type" jsonschema:"file, dir, symlink, or another type"`
	Size int64  `json:"size"`
}

func (g *Gateway) addFiles() {
	addTool(g, &mcp.Tool{
		Name:        "read_file",
		Title:       "Read a workspace file",
		Description: "Read a file of the workspace (or a spill file of exec). Text comes as text, optionally a 1-based inclusive line range; binary comes as base64. Files over the byte cap are refused, never cut.",
		Annotations: &mcp.ToolAnnotations{Title: "read_file", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)},
	}, g.readFile)
	addTool(g, &mcp.Tool{
		Name:        "write_file",
		Title:       "Write a workspace file",
		Description: "Replace a workspace file with new content, atomically (readers see the old or the new file). Pass expected_version from read_file to refuse overwriting a change made since.",
		Annotations: &mcp.ToolAnnotations{Title: "write_file", DestructiveHint: ptr(true), IdempotentHint: true, OpenWorldHint: ptr(false)},
	}, g.writeFile)
	addTool(g, &mcp.Tool{
		Name:        "edit_file",
		Title:       "Edit a workspace file",
		Description: "Replace old_text, which must occur exactly once, with new_text in a workspace text file, atomically.",
		Annotations: &mcp.ToolAnnotations{Title: "edit_file", DestructiveHint: ptr(true), OpenWorldHint: ptr(false)},
	}, g.editFile)
	addTool(g, &mcp.Tool{
		Name:        "list_dir",
		Title:       "List a workspace directory",
		Description: "List a workspace directory, sorted by name, at most limit entries (default 1000). Symlinks are shown, not followed.",
		Annotations: &mcp.ToolAnnotations{Title: "list_dir", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)},
	}, g.listDir)
}

func (g *Gateway) readCap(arg int64) (int64, error) {
	if arg < 0 {
		return 0, badArg("max_bytes", "%d is negative; give a positive byte count or leave it out", arg)
	}
	if arg == 0 || arg > g.opts.MaxReadBytes {
		return g.opts.MaxReadBytes, nil
	}
	return arg, nil
}

func (g *Gateway) readFile(ctx context.Context, c *call, in ReadInput) (string, ReadOutput, error) {
	var out ReadOutput
	if in.Path == "" {
		return "", out, badArg("path", "empty; give a file path relative to the workspace")
	}
	if in.StartLine < 0 || in.EndLine < 0 {
		return "", out, badArg("start_line", "lines are 1-based; give positive line numbers")
	}
	if in.EndLine != 0 && in.StartLine > in.EndLine {
		return "", out, badArg("end_line", "%d is before start_line %d; give end_line >= start_line", in.EndLine, in.StartLine)
	}
	maxBytes, err := g.readCap(in.MaxBytes)
	if err != nil {
		return "", out, err
	}
	w, err := c.world(ctx)
	if err != nil {
		return "", out, err
	}
	var data []byte
	var version string
	if name, ok := strings.CutPrefix(in.Path, SpillPrefix); ok {
		data, err = c.s.readSpill(w, name, maxBytes)
	} else {
		var f *execworld.File
		f, err = w.FS.ReadFile(in.Path, maxBytes)
		if f != nil {
			data, version = f.Data, f.Version.String()
		}
	}
	if err != nil {
		return "", out, pathError("path", in.Path, err)
	}
	out = ReadOutput{Path: in.Path, Size: int64(len(data)), Version: version}
	if !execworld.IsText(data) {
		if in.StartLine != 0 || in.EndLine != 0 {
			return "", ReadOutput{}, badArg("start_line", "%s is binary (not UTF-8 text); line ranges apply to text files only, leave them out", in.Path)
		}
		out.Binary, out.Encoding = true, "base64"
		out.Content = base64.StdEncoding.EncodeToString(data)
		return fmt.Sprintf("%s: binary, %d bytes (base64 in structured content)\n%s", in.Path, len(data), out.Content), out, nil
	}
	text := string(data)
	lines := strings.SplitAfter(text, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	out.TotalLines = len(lines)
	if in.StartLine == 0 && in.EndLine == 0 {
		out.Content = text
		return text, out, nil
	}
	start, end := max(in.StartLine, 1), in.EndLine
	if end == 0 || end > len(lines) {
		end = len(lines)
	}
	if start > len(lines) {
		return "", ReadOutput{}, badArg("start_line", "%d is past the end: %s has %d lines", start, in.Path, len(lines))
	}
	out.StartLine, out.EndLine = start, end
	out.Content = strings.Join(lines[start-1:end], "")
	return out.Content, out, nil
}

// readSpill reads a spill file whole, under the byte cap.
func (s *session) readSpill(w *execworld.World, name string, maxBytes int64) ([]byte, error) {
	f, err := s.openSpill(w, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > maxBytes {
		return nil, &execworld.TooLargeError{Path: SpillPrefix + name, Size: int64(len(data)), Limit: maxBytes}
	}
	return data, nil
}

// expected parses an expected_version argument.
func expected(s string) (*execworld.Version, error) {
	switch s {
	case "":
		return nil, nil
	case "absent":
		return &execworld.Version{}, nil
	}
	v, err := execworld.ParseVersion(s)
	if err != nil {
		return nil, badArg("expected_version", "%q is not a version read_file returned (or \"absent\"): pass it unchanged", s)
	}
	return &v, nil
}

func (g *Gateway) writeFile(ctx context.Context, c *call, in WriteInput) (string, WriteOutput, error) {
	var out WriteOutput
	if in.Path == "" {
		return "", out, badArg("path", "empty; give a file path relative to the workspace")
	}
	exp, err := expected(in.ExpectedVersion)
	if err != nil {
		return "", out, err
	}
	w, err := c.world(ctx)
	if err != nil {
		return "", out, err
	}
	v, err := w.FS.WriteFile(in.Path, []byte(in.Content), &execworld.WriteOptions{Expect: exp, MkdirAll: in.CreateDirs})
	if err != nil {
		return "", out, pathError("path", in.Path, err)
	}
	out = WriteOutput{Path: in.Path, Bytes: len(in.Content), Version: v.String()}
	return fmt.Sprintf("wrote %s (%d bytes, version %s)", in.Path, len(in.Content), out.Version), out, nil
}

func (g *Gateway) editFile(ctx context.Context, c *call, in EditInput) (string, WriteOutput, error) {
	var out WriteOutput
	if in.Path == "" {
		return "", out, badArg("path", "empty; give a file path relative to the workspace")
	}
	if in.OldText == "" {
		return "", out, badArg("old_text", "empty; give the exact text to replace, copied from read_file")
	}
	exp, err := expected(in.ExpectedVersion)
	if err != nil {
		return "", out, err
	}
	w, err := c.world(ctx)
	if err != nil {
		return "", out, err
	}
	v, err := w.FS.Edit(in.Path, in.OldText, in.NewText, g.opts.MaxReadBytes, &execworld.WriteOptions{Expect: exp})
	if err != nil {
		var ee *execworld.EditError
		if errors.As(err, &ee) {
			return "", out, badArg("old_text", "%v", err)
		}
		return "", out, pathError("path", in.Path, err)
	}
	st, serr := w.FS.Stat(in.Path)
	size := 0
	if serr == nil {
		size = int(st.Size)
	}
	out = WriteOutput{Path: in.Path, Bytes: size, Version: v.String()}
	return fmt.Sprintf("edited %s (version %s)", in.Path, out.Version), out, nil
}

func (g *Gateway) listDir(ctx context.Context, c *call, in ListInput) (string, ListOutput, error) {
	var out ListOutput
	if in.Limit < 0 || in.Limit > execworld.DefaultListLimit {
		return "", out, badArg("limit", "%d is outside 1 to %d; leave it out for %d", in.Limit, execworld.DefaultListLimit, execworld.DefaultListLimit)
	}
	w, err := c.world(ctx)
	if err != nil {
		return "", out, err
	}
	p := in.Path
	if p == "" {
		p = "."
	}
	l, err := w.FS.ListDir(p, in.Limit)
	if err != nil {
		return "", out, pathError("path", p, err)
	}
	out = ListOutput{Path: p, Total: l.Total, Truncated: l.Truncated, Entries: make([]ListEntry, 0, len(l.Entries))}
	var b strings.Builder
	for _, e := range l.Entries {
		out.Entries = append(out.Entries, ListEntry{Name: e.Name, Type: e.Type.String(), Size: e.Size})
		name := e.Name
		if e.Type == execworld.TypeDir {
			name += "/"
		}
		fmt.Fprintf(&b, "%s\t%s\t%d\n", name, e.Type, e.Size)
	}
	if l.Truncated {
		fmt.Fprintf(&b, "… %d more entries omitted (limit %d)\n", l.Total-len(l.Entries), len(l.Entries))
	}
	return b.String(), out, nil
}

// pathError names the argument of a failed filesystem operation.
func pathError(arg, path string, err error) error {
	switch {
	case errors.Is(err, execworld.ErrEscape):
		return badArg(arg, "%s is outside the workspace (%v); use a path inside it", path, err)
	case errors.Is(err, execworld.ErrVersionMismatch):
		return badArg("expected_version", "%s changed since that version was read (or exists where \"absent\" was expected): read it again and redo the change", path)
	case errors.Is(err, execworld.ErrNotRegular), errors.Is(err, execworld.ErrNotText):
		return badArg(arg, "%v", err)
	}
	var tl *execworld.TooLargeError
	if errors.As(err, &tl) {
		return badArg(arg, "%s is %d bytes, over the %d-byte cap; read a line range of a smaller file, or run a command (head, sed -n) with exec", path, tl.Size, tl.Limit)
	}
	return badArg(arg, "%v", err)
}
