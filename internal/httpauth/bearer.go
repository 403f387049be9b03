// Package httpauth reads and compares the bearer tokens of dsh serve's
// HTTP endpoints (RFC 6750), once for every endpoint that takes one.
package httpauth

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// Token returns the token of an Authorization header value, or "" when
// the header is absent or not "Bearer TOKEN". The scheme is
// case-insensitive (RFC 9110 §11.1).
func Token(header string) string {
	if len(header) < 7 || !strings.EqualFold(header[:7], "Bearer ") {
		return ""
	}
	return strings.TrimSpace(header[7:])
}

// FromRequest is Token of r's Authorization header.
func FromRequest(r *http.Request) string { return Token(r.Header.Get("Authorization")) }

// Equal compares two tokens in time that depends on neither: their
// SHA-256 hashes have one length, so the compare leaks nothing about
// either. An empty token equals nothing.
func Equal(got, want string) bool {
	if got == "" || want == "" {
		return false
	}
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}
