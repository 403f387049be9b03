package lsp

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Code is the type of an Error, as tools and the CLI report it.
type Code int

const (
	// CodeUnavailable: no server for the file, or its server cannot run.
	CodeUnavailable Code = iota + 1
	// CodeConflict: two servers claim one extension.
	CodeConflict
	// CodeInvalidProvider: a server configuration is invalid.
	CodeInvalidProvider
	// CodeUnsupportedOperation: the server does not offer the operation.
	CodeUnsupportedOperation
	// CodeMalformedResponse: the server answered with something that is
	// not a valid result.
	CodeMalformedResponse
	// CodeWorkspaceRequired: no workspace, or the workspace is unusable.
	CodeWorkspaceRequired
	// CodeInvalidFile: the file is missing, not regular, not UTF-8, too
	// large or outside the workspace.
	CodeInvalidFile
	// CodeInvalidPosition: the line or column is not in the file.
	CodeInvalidPosition
	// CodeIndexing: the server is still indexing past its readiness cap;
	// the same query later will be answered.
	CodeIndexing
	// CodeTimeout: the request took longer than its timeout.
	CodeTimeout
	// CodeServerError: the server answered the request with an error.
	CodeServerError
	// CodeServerFailed: the server exited or broke the protocol, also
	// after the one retry on a fresh process, or is backed off after
	// failing repeatedly.
	CodeServerFailed
	// CodeAborted: the caller cancelled the query.
	CodeAborted
)

var codeNames = map[Code]string{
	CodeUnavailable:          "LSP_UNAVAILABLE",
	CodeConflict:             "LSP_CONFLICT",
	CodeInvalidProvider:      "LSP_INVALID_PROVIDER",
	CodeUnsupportedOperation: "LSP_UNSUPPORTED_OPERATION",
	CodeMalformedResponse:    "LSP_MALFORMED_RESPONSE",
	CodeWorkspaceRequired:    "LSP_WORKSPACE_REQUIRED",
	CodeInvalidFile:          "LSP_INVALID_FILE",
	CodeInvalidPosition:      "LSP_INVALID_POSITION",
	CodeIndexing:             "LSP_INDEXING",
	CodeTimeout:              "LSP_TIMEOUT",
	CodeServerError:          "LSP_SERVER_ERROR",
	CodeServerFailed:         "LSP_SERVER_FAILED",
	CodeAborted:              "LSP_ABORTED",
}

// String is the code as tools report it: LSP_UNAVAILABLE, ….
func (c Code) String() string {
	if s, ok := codeNames[c]; ok {
		return s
	}
	return fmt.Sprintf("LSP_CODE_%d", int(c))
}

// Error is a typed failure of the LSP surface.
type Error struct {
	Code Code
	// Msg says what happened, with which input, and what to do.
	Msg string
	// Err is the underlying cause, if any.
	Err error
}

func (e *Error) Error() string { return "lsp: " + e.Msg }
func (e *Error) Unwrap() error { return e.Err }

func errorf(code Code, cause error, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...), Err: cause}
}

// CodeOf returns the Code of err, or 0 when err is no *Error.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

// ResponseError is an error response of a server.
type ResponseError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *ResponseError) Error() string {
	return fmt.Sprintf("server error %d: %s", e.Code, e.Message)
}

// JSON-RPC and LSP error codes dsh acts on.
const (
	codeMethodNotFound   = -32601
	codeRequestCancelled = -32800
	codeContentModified  = -32801
)

// transportError means the connection to a server broke: the process
// exited, a write failed, or a message could not be framed or decoded.
// Only a transport error earns a retry on a fresh process.
type transportError struct{ err error }

func (e *transportError) Error() string { return e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

// isTransport reports whether err is a transport failure.
func isTransport(err error) bool {
	var t *transportError
	return errors.As(err, &t)
}
