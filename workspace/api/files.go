package api

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/workspace"
)

const maxPath = 4096

// checkPath refuses, before any lookup, a path that could only leave the
// workspace or is not written plainly: absolute, with "..", "." or empty
// segments, a NUL byte, or too long. Containment itself is the world FS's
// (openat2 beneath the root), this only answers early and clearly.
func checkPath(what, p string) *apiError {
	switch {
	case len(p) > maxPath:
		return errorf(http.StatusBadRequest, codeInvalid, "%s is %d bytes long, over %d", what, len(p), maxPath)
	case strings.IndexByte(p, 0) >= 0:
		return errorf(http.StatusBadRequest, codeInvalid, "%s %q holds a NUL byte", what, trunc(p))
	case strings.HasPrefix(p, "/"):
		return errorf(http.StatusBadRequest, codeInvalid, "%s %q is absolute; paths are relative to the workspace root (such as src/main.go)", what, trunc(p))
	}
	for _, seg := range strings.Split(strings.TrimSuffix(p, "/"), "/") {
		switch seg {
		case "..":
			return errorf(http.StatusBadRequest, codeInvalid, "%s %q leaves the workspace (..); name a path inside it", what, trunc(p))
		case ".", "":
			if p != "." {
				return errorf(http.StatusBadRequest, codeInvalid, "%s %q has an empty or \".\" segment; write it as %q", what, trunc(p), path.Clean(p))
			}
		}
	}
	return nil
}

// filePath is the {path...} of a files/ route: required, checked.
func filePath(r *http.Request) (string, *apiError) {
	p := r.PathValue("path")
	if p == "" {
		return "", errorf(http.StatusBadRequest, codeInvalid, "name a file after files/ (such as files/notes.txt); list a directory with ls/")
	}
	return p, checkPath("path", p)
}

// borrow borrows the world of the route's workspace for the request;
// when it cannot, it has answered with why, and ok is false.
func (a *API) borrow(w http.ResponseWriter, r *http.Request) (world *execworld.World, release func(), ok bool) {
	world, release, err := a.m.World(r.Context(), r.PathValue("name"))
	if err != nil {
		a.fail(w, r, err)
		return nil, nil, false
	}
	return world, release, true
}

// fsErr names the workspace in a world FS error.
func fsErr(name string, err error) error {
	return fmt.Errorf("workspace %q: %w", name, err)
}

func (a *API) readFile(w http.ResponseWriter, r *http.Request) {
	p, e := filePath(r)
	if e != nil {
		writeError(w, e)
		return
	}
	name := r.PathValue("name")
	world, release, ok := a.borrow(w, r)
	if !ok {
		return
	}
	defer release()
	f, err := world.FS.ReadFile(p, a.opts.MaxFile)
	if err != nil {
		var big *execworld.TooLargeError
		if errors.As(err, &big) {
			writeError(w, errorf(http.StatusRequestEntityTooLarge, codeTooLarge, "%s of workspace %q is %d bytes, over the server's %d-byte file limit (--max-file); read it in parts with exec (such as head -c or split)", p, name, big.Size, big.Limit))
			return
		}
		a.fail(w, r, fsErr(name, err))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(f.Data)))
	h.Set("ETag", `"`+f.Version.String()+`"`)
	w.WriteHeader(http.StatusOK)
	w.Write(f.Data)
}

func (a *API) writeFile(w http.ResponseWriter, r *http.Request) {
	p, e := filePath(r)
	if e != nil {
		writeError(w, e)
		return
	}
	var perm fs.FileMode
	if m := r.URL.Query().Get("mode"); m != "" {
		v, err := strconv.ParseUint(m, 8, 32)
		if err != nil || v > 0o777 {
			writeError(w, errorf(http.StatusBadRequest, codeInvalid, "mode %q: give octal permission bits such as 0644 or 0755", trunc(m)))
			return
		}
		perm = fs.FileMode(v)
	}
	if r.ContentLength > a.opts.MaxFile {
		writeError(w, a.fileTooLarge(r.ContentLength))
		return
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, a.opts.MaxFile))
	if err != nil {
		var big *http.MaxBytesError
		if errors.As(err, &big) {
			writeError(w, a.fileTooLarge(-1))
			return
		}
		writeError(w, errorf(http.StatusBadRequest, codeInvalid, "reading the file's bytes: %v", err))
		return
	}
	name := r.PathValue("name")
	world, release, ok := a.borrow(w, r)
	if !ok {
		return
	}
	defer release()
	v, err := world.FS.WriteFile(p, data, &execworld.WriteOptions{Perm: perm, MkdirAll: true})
	if err != nil {
		a.fail(w, r, fsErr(name, err))
		return
	}
	w.Header().Set("ETag", `"`+v.String()+`"`)
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) fileTooLarge(n int64) *apiError {
	size := "the file"
	if n >= 0 {
		size = fmt.Sprintf("the file (%d bytes)", n)
	}
	return errorf(http.StatusRequestEntityTooLarge, codeTooLarge, "%s is over the server's %d-byte file limit (--max-file); write it in parts or raise the limit", size, a.opts.MaxFile)
}

func (a *API) removeFile(w http.ResponseWriter, r *http.Request) {
	p, e := filePath(r)
	if e != nil {
		writeError(w, e)
		return
	}
	name := r.PathValue("name")
	world, release, ok := a.borrow(w, r)
	if !ok {
		return
	}
	defer release()
	if err := world.FS.Remove(p); err != nil {
		a.fail(w, r, fsErr(name, err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// listing is the answer of ls/.
type listing struct {
	Entries []workspace.Entry `json:"entries"`
	// Truncated tells that the directory has more entries than listed
	// (the first execworld.DefaultListLimit by name are).
	Truncated bool `json:"truncated,omitempty"`
}

func (a *API) listDir(w http.ResponseWriter, r *http.Request) {
	p := r.PathValue("path")
	if p == "" {
		p = "."
	} else if e := checkPath("path", p); e != nil {
		writeError(w, e)
		return
	}
	name := r.PathValue("name")
	world, release, ok := a.borrow(w, r)
	if !ok {
		return
	}
	defer release()
	l, err := world.FS.ListDir(p, 0)
	if err != nil {
		a.fail(w, r, fsErr(name, err))
		return
	}
	out := listing{Entries: make([]workspace.Entry, 0, len(l.Entries)), Truncated: l.Truncated}
	for _, en := range l.Entries {
		e := workspace.Entry{Name: en.Name, Type: en.Type.String(), Size: en.Size}
		if info, err := world.FS.Lstat(path.Join(p, en.Name)); err == nil {
			e.Mode = fmt.Sprintf("%04o", uint32(info.Mode.Perm()))
			e.MTime = time.Unix(0, info.Version.MtimeNs).UTC()
		}
		out.Entries = append(out.Entries, e)
	}
	writeJSON(w, http.StatusOK, out)
}
