package web

import (
	"context"
	"net"
	"net/http"
	"time"
)

// Reference defaults of the fetcher (the harness's HTTP fetcher).
const (
	DefaultMaxURLLength = 2048
	DefaultMaxBytes     = 5_000_000
	DefaultMaxChars     = 100_000
	DefaultTimeout      = 30 * time.Second
	DefaultMaxRedirects = 5
)

// acceptHeader is the fixed Accept header of every fetch.
const acceptHeader = "text/html,application/xhtml+xml,text/*;q=0.9,application/json;q=0.8"

// Dialer is what a Fetcher connects through. It must refuse what its
// policy refuses: the Fetcher makes no connection any other way.
type Dialer interface {
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}

// FetchOptions configures a Fetcher. The zero value gives the reference
// defaults under the web default policy (public addresses, ports 80 and 443).
type FetchOptions struct {
	// Dialer makes every connection, redirect hops included: a
	// *netpolicy.Dialer, or a world's execworld.Net so that a fetch on the
	// world's behalf goes through that world's policy. If nil, a
	// netpolicy.Dialer with netpolicy.WebDefault() and the system resolver
	// is used.
	Dialer Dialer
	// Transport, if set, replaces the Dialer's transport. It is a seam for
	// tests and benchmarks: whoever sets it answers for egress policy.
	Transport http.RoundTripper

	// MaxURLLength caps the raw URL, in bytes. If zero, 2048.
	MaxURLLength int
	// MaxBytes caps the response body in bytes. A Content-Length over it
	// fails before the body is read; a longer streamed body is cut and
	// marked truncated. If zero, 5,000,000.
	MaxBytes int64
	// MaxChars caps the decoded body, in characters (code points). If
	// zero, 100,000.
	MaxChars int
	// Timeout bounds the whole fetch, body included. If zero, 30s.
	Timeout time.Duration
	// MaxRedirects is the redirect hop budget. If zero, 5; negative
	// means no redirect is followed.
	MaxRedirects int
	// CrossOriginRedirects allows redirects to another scheme, host or
	// port. Each hop is still checked by the Dialer. If false (the
	// reference behaviour), such a redirect fails with WEB_REDIRECT_BLOCKED.
	CrossOriginRedirects bool
	// UserAgent is sent with every request. If empty, "dsh-fetch/1".
	UserAgent string
}

func (o *FetchOptions) maxURLLength() int {
	if o.MaxURLLength > 0 {
		return o.MaxURLLength
	}
	return DefaultMaxURLLength
}

func (o *FetchOptions) maxBytes() int64 {
	if o.MaxBytes > 0 {
		return o.MaxBytes
	}
	return DefaultMaxBytes
}

func (o *FetchOptions) maxChars() int {
	if o.MaxChars > 0 {
		return o.MaxChars
	}
	return DefaultMaxChars
}

func (o *FetchOptions) timeout() time.Duration {
	if o.Timeout > 0 {
		return o.Timeout
	}
	return DefaultTimeout
}

func (o *FetchOptions) maxRedirects() int {
	switch {
	case o.MaxRedirects > 0:
		return o.MaxRedirects
	case o.MaxRedirects < 0:
		return 0
	}
	return DefaultMaxRedirects
}

func (o *FetchOptions) userAgent() string {
	if o.UserAgent != "" {
		return o.UserAgent
	}
	return "dsh-fetch/1"
}
