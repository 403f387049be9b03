package lsp

import (
	"errors"
	"path/filepath"
	"strings"

	"github.com/dsh-dev/dsh/execworld"
)

// document is a source file read for one query.
type document struct {
	rel   string // relative to the world's root
	uri   string // in the world
	lang  string
	text  string
	lines []string
}

func (d *document) line(i int) (string, bool) {
	if i < 0 || i >= len(d.lines) {
		return "", false
	}
	return d.lines[i], true
}

// readDoc reads file through the world's FS: it must be a regular UTF-8
// file inside the query's workspace, at most the server's document cap.
func (c *Client) readDoc(ws *workspace, file string, cfg *ServerConfig) (*document, error) {
	p := file
	if !filepath.IsAbs(p) {
		p = filepath.Join(ws.host, p)
	}
	p = filepath.Clean(p)
	wsRel, err := filepath.Rel(ws.host, p)
	if err != nil || wsRel == ".." || strings.HasPrefix(wsRel, "../") {
		return nil, errorf(CodeInvalidFile, nil, "file %s is outside the workspace %s; give a file inside it", file, ws.host)
	}
	rel := filepath.Join(ws.rel, wsRel)
	text, _, err := c.w.FS.ReadText(rel, cfg.MaxDocumentBytes)
	if err != nil {
		return nil, fileError(file, cfg, err)
	}
	inside, err := c.w.PathInside(p)
	if err != nil {
		return nil, errorf(CodeInvalidFile, err, "file %s: %v", file, err)
	}
	return &document{
		rel:   wsRel,
		uri:   fileURI(inside),
		lang:  cfg.Extensions[Route(p)],
		text:  text,
		lines: lines(text),
	}, nil
}

func fileError(file string, cfg *ServerConfig, err error) error {
	var tl *execworld.TooLargeError
	switch {
	case errors.As(err, &tl):
		return errorf(CodeInvalidFile, err, "file %s has %d bytes, over the %d-byte document limit of server %s", file, tl.Size, cfg.MaxDocumentBytes, cfg.ID)
	case errors.Is(err, execworld.ErrNotText):
		return errorf(CodeInvalidFile, err, "file %s is not UTF-8 text; language servers are asked only about text files", file)
	case errors.Is(err, execworld.ErrNotRegular):
		return errorf(CodeInvalidFile, err, "file %s is not a regular file", file)
	case errors.Is(err, execworld.ErrEscape):
		return errorf(CodeInvalidFile, err, "file %s leads outside the workspace (a symlink or ..); give a file inside it", file)
	}
	return errorf(CodeInvalidFile, err, "file %s: %v", file, err)
}

// locations maps a server's locations to host paths and 1-based
// code-point positions, converting columns from the target file's text
// when the world's FS can read it.
func (c *Client) locations(ws *workspace, wire []wireLocation) []Location {
	root := c.w.FS.Root()
	texts := map[string][]string{}
	out := make([]Location, 0, len(wire))
	for _, wl := range wire {
		loc := Location{Line: wl.line + 1, Column: wl.col + 1, EndLine: wl.eLine + 1, EndColumn: wl.eCol + 1, UTF16: true}
		inside := uriPath(wl.uri)
		if inside == "" {
			loc.Path = wl.uri
			out = append(out, loc)
			continue
		}
		host, err := c.w.PathOutside(inside)
		if err != nil {
			loc.Path = inside
			out = append(out, loc)
			continue
		}
		loc.Path = host
		if r, err := filepath.Rel(ws.host, host); err == nil && r != ".." && !strings.HasPrefix(r, "../") {
			loc.Rel = r
		}
		if r, err := filepath.Rel(root, host); err == nil && r != ".." && !strings.HasPrefix(r, "../") {
			ls, ok := texts[r]
			if !ok {
				if text, _, err := c.w.FS.ReadText(r, DefaultMaxDocumentBytes); err == nil {
					ls = lines(text)
				}
				texts[r] = ls
			}
			if ls != nil {
				loc.UTF16 = false
				if l, ok := at(ls, wl.line); ok {
					loc.Column = pointCol(l, wl.col) + 1
				}
				if l, ok := at(ls, wl.eLine); ok {
					loc.EndColumn = pointCol(l, wl.eCol) + 1
				}
			}
		}
		out = append(out, loc)
	}
	return out
}

func at(ls []string, i int) (string, bool) {
	if i < 0 || i >= len(ls) {
		return "", false
	}
	return ls[i], true
}
