package web

import (
	"errors"
	"fmt"

	"github.com/dsh-dev/dsh/netpolicy"
)

// Code is the stable, machine-readable kind of a web failure. The CLI
// prints it and the MCP tools return it, so callers can branch on it.
type Code string

// Fetch codes.
const (
	CodeInvalidURL         Code = "WEB_INVALID_URL"              // too long, unparsable, not http(s), no host
	CodeBlockedURL         Code = "WEB_BLOCKED_URL"              // valid http(s) URL refused: user info
	CodeRedirectBlocked    Code = "WEB_REDIRECT_BLOCKED"         // hop budget, cross-origin, bad target
	CodeUnsupportedContent Code = "WEB_UNSUPPORTED_CONTENT_TYPE" // type or charset not text
	CodeTooLarge           Code = "WEB_FETCH_TOO_LARGE"          // Content-Length over the byte cap
	CodeTimeout            Code = "WEB_FETCH_TIMEOUT"            // the fetch's own deadline passed
	CodeConnectFailed      Code = "WEB_CONNECT_FAILED"           // the upstream refused the connection, or is unreachable or unresolvable
	CodeProviderError      Code = "WEB_PROVIDER_ERROR"           // other network or upstream failure
	CodeAborted            Code = "WEB_ABORTED"                  // the caller cancelled
	CodeNetDenied          Code = "NET_DENIED"                   // the egress policy refused the destination
)

// Search codes.
const (
	CodeInvalidQuery          Code = "WEB_INVALID_QUERY"
	CodeDuplicateProvider     Code = "WEB_DUPLICATE_PROVIDER"
	CodeConfiguredMissing     Code = "WEB_PROVIDER_CONFIGURED_MISSING"
	CodeConfiguredUnavailable Code = "WEB_PROVIDER_CONFIGURED_UNAVAILABLE"
	CodeUnavailable           Code = "WEB_PROVIDER_UNAVAILABLE"
	CodeAmbiguous             Code = "WEB_PROVIDER_AMBIGUOUS"
)

// ErrWeb is matched by every *Error: errors.Is(err, web.ErrWeb).
var ErrWeb = errors.New("web: failure")

// Error is a typed web failure. Msg says what happened and what to do;
// Err, if set, is the underlying cause (a *netpolicy.DeniedError for
// NET_DENIED, so errors.Is(err, netpolicy.ErrDenied) holds).
type Error struct {
	Code Code
	// URL is the URL being fetched when the failure happened (the redirect
	// target for redirect failures); empty for search failures.
	URL string
	Msg string
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil && e.Code != CodeNetDenied {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Msg, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Msg)
}

func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrWeb) true for every *Error.
func (e *Error) Is(target error) bool { return target == ErrWeb }

// Reason returns the policy reason of a NET_DENIED error, or "".
func (e *Error) Reason() string {
	var de *netpolicy.DeniedError
	if errors.As(e.Err, &de) {
		return de.Decision.Reason
	}
	return ""
}

// CodeOf returns the Code of err, or "" when err is not a *Error.
func CodeOf(err error) Code {
	var we *Error
	if errors.As(err, &we) {
		return we.Code
	}
	return ""
}

func newError(code Code, url, format string, args ...any) *Error {
	return &Error{Code: code, URL: url, Msg: fmt.Sprintf(format, args...)}
}

func wrapError(code Code, url string, err error, format string, args ...any) *Error {
	return &Error{Code: code, URL: url, Msg: fmt.Sprintf(format, args...), Err: err}
}
