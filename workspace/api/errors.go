package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"syscall"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/workspace"
)

// The codes of docs/WORKSPACES.md.
const (
	codeInvalid      = "invalid"
	codeUnauthorized = "unauthorized"
	codeForbidden    = "forbidden"
	codeNotFound     = "not_found"
	codeConflict     = "conflict"
	codeTooLarge     = "too_large"
	codeLimit        = "limit"
	codeInternal     = "internal"
)

// apiError is an error answer: its status and its body.
type apiError struct {
	status  int
	code    string
	message string
}

func (e *apiError) Error() string { return e.message }

func errorf(status int, code, format string, args ...any) *apiError {
	return &apiError{status, code, fmt.Sprintf(format, args...)}
}

func writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.status, struct {
		Error workspace.ErrorBody `json:"error"`
	}{workspace.ErrorBody{Code: e.code, Message: e.message}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// fail answers err, mapped to its status and code (the Manager's
// sentinels, the world's errors); what maps to none is a 500, logged
// with its detail, which the answer does not carry.
func (a *API) fail(w http.ResponseWriter, r *http.Request, err error) {
	e := a.classify(err)
	if e.status == http.StatusInternalServerError {
		a.log.Error("workspace API: internal error", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeError(w, e)
}

func (a *API) classify(err error) *apiError {
	var e *apiError
	if errors.As(err, &e) {
		return e
	}
	msg := err.Error()
	var big *http.MaxBytesError
	var tooLarge *execworld.TooLargeError
	var start *execworld.StartError
	switch {
	case errors.As(err, &start) && (start.Code == 126 || start.Code == 127):
		// The program is missing or not executable: the request's fault.
		return &apiError{http.StatusBadRequest, codeInvalid, msg}
	case errors.As(err, &big):
		return &apiError{http.StatusRequestEntityTooLarge, codeTooLarge, fmt.Sprintf("the request body is over the server's %d-byte limit; send less", big.Limit)}
	case errors.As(err, &tooLarge):
		return &apiError{http.StatusRequestEntityTooLarge, codeTooLarge, msg}
	case errors.Is(err, workspace.ErrInvalid), errors.Is(err, execworld.ErrEscape),
		errors.Is(err, execworld.ErrInvalidCmd), errors.Is(err, execworld.ErrNotRegular),
		errors.Is(err, syscall.EISDIR), errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.ENAMETOOLONG):
		return &apiError{http.StatusBadRequest, codeInvalid, msg}
	case errors.Is(err, workspace.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return &apiError{http.StatusNotFound, codeNotFound, msg}
	case errors.Is(err, workspace.ErrExists), errors.Is(err, workspace.ErrConflict),
		errors.Is(err, execworld.ErrPaused), errors.Is(err, execworld.ErrCannotPause),
		errors.Is(err, execworld.ErrClosed), errors.Is(err, syscall.ENOTEMPTY),
		errors.Is(err, syscall.EROFS), errors.Is(err, fs.ErrExist):
		return &apiError{http.StatusConflict, codeConflict, msg}
	case errors.Is(err, workspace.ErrForbidden):
		return &apiError{http.StatusForbidden, codeForbidden, msg}
	case errors.Is(err, workspace.ErrLimit):
		return &apiError{http.StatusTooManyRequests, codeLimit, msg}
	}
	return &apiError{http.StatusInternalServerError, codeInternal, "internal error; the server's log has its detail"}
}
