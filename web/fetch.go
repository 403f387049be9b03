package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/dsh-dev/dsh/netpolicy"
)

// Result is a fetched resource. A non-2xx status is a result, not an
// error: a 404 page is what the server says about the URL.
type Result struct {
	// URL is the final URL, after redirects.
	URL string
	// StatusCode is the HTTP status of the final response.
	StatusCode int
	// Kind says whether Content is HTML or plain text.
	Kind Kind
	// Content is the decoded body, at most MaxChars characters.
	Content string
	// Truncated reports whether the byte or character cap cut the body.
	Truncated bool
}

// Fetcher fetches URLs with the reference's transport hygiene, every
// connection made through its Dialer. It is safe for concurrent
// use and keeps idle connections until Close.
type Fetcher struct {
	opts   FetchOptions
	client *http.Client
}

// errOwnDeadline is the cause of the fetch's own timeout, which tells it
// apart from a caller's cancellation even when both budgets are equal.
var errOwnDeadline = errors.New("web: fetch deadline")

// NewFetcher returns a Fetcher. opts may be nil for the reference defaults.
func NewFetcher(opts *FetchOptions) (*Fetcher, error) {
	var o FetchOptions
	if opts != nil {
		o = *opts
	}
	rt := o.Transport
	if rt == nil {
		d := o.Dialer
		if d == nil {
			p, err := netpolicy.New(netpolicy.WebDefault())
			if err != nil {
				return nil, fmt.Errorf("building the default web policy: %w", err)
			}
			d = &netpolicy.Dialer{Policy: p}
		}
		t := netpolicy.NewTransport(d.DialContext)
		// The Dialer's transport already has no proxy; say it again here
		// because an HTTP(S)_PROXY from the environment would carry the
		// request past the policy check to a proxy that dials for us.
		t.Proxy = nil
		t.MaxResponseHeaderBytes = 256 << 10
		rt = t
	}
	return &Fetcher{
		opts: o,
		client: &http.Client{
			Transport: rt,
			// Redirects are followed by Fetch itself so that every hop is
			// counted and re-validated; no Jar means no cookies.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}, nil
}

// Close drops idle connections. It is safe to call more than once.
func (f *Fetcher) Close() error {
	f.client.CloseIdleConnections()
	return nil
}

// Fetch GETs rawURL, following same-origin redirects, and returns the
// decoded body. Errors are *Error with a Code.
func (f *Fetcher) Fetch(ctx context.Context, rawURL string) (*Result, error) {
	u, werr := parseFetchURL(rawURL, f.opts.maxURLLength())
	if werr != nil {
		return nil, werr
	}
	parent := ctx
	ctx, cancel := context.WithTimeoutCause(ctx, f.opts.timeout(), errOwnDeadline)
	defer cancel()

	for hop := 0; ; hop++ {
		resp, err := f.get(ctx, u)
		if err != nil {
			return nil, f.failure(parent, ctx, u, hop, err)
		}
		if !isRedirect(resp.StatusCode) {
			return f.read(parent, ctx, u, resp)
		}
		// The body of a redirect is never read; closing it cancels it.
		resp.Body.Close()
		next, werr := f.redirectTarget(u, hop, resp)
		if werr != nil {
			return nil, werr
		}
		u = next
	}
}

func (f *Fetcher) get(ctx context.Context, u *url.URL) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", acceptHeader)
	req.Header.Set("User-Agent", f.opts.userAgent())
	return f.client.Do(req)
}

func isRedirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// redirectTarget applies the redirect rules in the reference's order: the
// hop budget first, then Location present, resolved against the current
// URL, re-validated like a fresh URL, and same-origin unless allowed.
// Where the target may connect is the Dialer's check on the next hop.
func (f *Fetcher) redirectTarget(cur *url.URL, hop int, resp *http.Response) (*url.URL, *Error) {
	if max := f.opts.maxRedirects(); hop >= max {
		return nil, newError(CodeRedirectBlocked, cur.String(), "redirect limit exceeded: %s redirects again after %d redirects (limit %d, web.fetch.max_redirects)", cur, hop, max)
	}
	loc := resp.Header.Get("Location")
	if loc == "" {
		return nil, newError(CodeProviderError, cur.String(), "%s answered HTTP %d without a Location header", cur, resp.StatusCode)
	}
	ref, err := url.Parse(loc)
	if err != nil {
		return nil, wrapError(CodeRedirectBlocked, truncateForMessage(loc), err, "%s redirects to an unparsable Location %q", cur, truncateForMessage(loc))
	}
	target := cur.ResolveReference(ref)
	next, werr := parseFetchURL(target.String(), f.opts.maxURLLength())
	if werr != nil {
		return nil, &Error{Code: CodeRedirectBlocked, URL: werr.URL, Msg: fmt.Sprintf("%s redirects to a URL that is not allowed: %s (%s)", cur, werr.Msg, werr.Code)}
	}
	if !f.opts.CrossOriginRedirects && origin(next) != origin(cur) {
		return nil, newError(CodeRedirectBlocked, next.String(), "%s redirects to another origin (%s); only same-origin redirects are followed - fetch %s directly if it is wanted", cur, origin(next), next)
	}
	return next, nil
}

// read checks the final response's type and size, then reads and decodes
// the body under the byte and character caps.
func (f *Fetcher) read(parent, ctx context.Context, u *url.URL, resp *http.Response) (*Result, error) {
	defer resp.Body.Close()
	res := &Result{URL: u.String(), StatusCode: resp.StatusCode, Kind: KindText}
	if resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified || resp.ContentLength == 0 {
		return res, nil // nothing to classify or decode
	}
	ct, werr := classify(resp.Header.Get("Content-Type"))
	if werr != nil {
		werr.URL = res.URL
		werr.Msg = fmt.Sprintf("%s: %s", res.URL, werr.Msg)
		return nil, werr
	}
	res.Kind = ct.kind
	maxBytes := f.opts.maxBytes()
	if resp.ContentLength > maxBytes {
		return nil, newError(CodeTooLarge, res.URL, "%s is %d bytes (Content-Length), over the limit of %d bytes (web.fetch.max_bytes)", res.URL, resp.ContentLength, maxBytes)
	}
	body, err := readCapped(resp.Body, resp.ContentLength, maxBytes)
	if err != nil {
		return nil, f.failure(parent, ctx, u, -1, err)
	}
	cut := int64(len(body)) > maxBytes
	if cut {
		body = body[:maxBytes]
	}
	text, charCut := capChars(decodeBody(body, ct, cut), f.opts.maxChars())
	res.Content = text
	res.Truncated = cut || charCut
	return res, nil
}

// failure turns a transport error into a typed one. The context decides
// first: after the own deadline every error is a timeout, after the
// caller's cancellation an abort, whatever the transport made of it.
func (f *Fetcher) failure(parent, ctx context.Context, u *url.URL, hop int, err error) *Error {
	where := u.String()
	if hop > 0 {
		where = fmt.Sprintf("%s (redirect hop %d)", u, hop)
	}
	switch {
	case parent.Err() != nil:
		return wrapError(CodeAborted, u.String(), context.Cause(parent), "fetch of %s was cancelled", where)
	case errors.Is(context.Cause(ctx), errOwnDeadline):
		return newError(CodeTimeout, u.String(), "fetch of %s did not finish within %s (web.fetch.timeout)", where, f.opts.timeout())
	}
	var denied *netpolicy.DeniedError
	if errors.As(err, &denied) {
		// The decision's own text names the destination, the reason and
		// the rule, and says how to allow it where that is possible.
		msg := fmt.Sprintf("fetch of %s refused by the web policy: %s", where, strings.TrimPrefix(denied.Error(), "netpolicy: "))
		return &Error{Code: CodeNetDenied, URL: u.String(), Msg: msg, Err: denied}
	}
	if errors.Is(err, netpolicy.ErrInvalidTarget) {
		return wrapError(CodeInvalidURL, u.String(), unwrapURLError(err), "cannot fetch %s", where)
	}
	if connectFailed(err) {
		return wrapError(CodeConnectFailed, u.String(), unwrapURLError(err), "cannot connect for %s", where)
	}
	return wrapError(CodeProviderError, u.String(), unwrapURLError(err), "fetch of %s failed", where)
}

// connectFailed reports whether err is a failure to reach the upstream at
// all: the name did not resolve, or no connection could be made (refused,
// unreachable, connect timeout). Failures after connecting (TLS, a reset,
// a malformed answer) are not.
func connectFailed(err error) bool {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// unwrapURLError drops net/http's "Get \"url\": " prefix, which would
// repeat the URL the message already names.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// readCapped reads r to its end or to one byte past max, whichever comes
// first: a body of exactly max bytes is whole, one byte more is cut. A
// declared length within the cap sizes the buffer once.
func readCapped(r io.Reader, declared, max int64) ([]byte, error) {
	lr := io.LimitReader(r, max+1)
	if declared <= 0 || declared > max {
		return io.ReadAll(lr)
	}
	buf := make([]byte, 0, declared+1) // +1: room for the read that reports EOF
	for {
		if len(buf) == cap(buf) {
			// The server sent more than it declared (net/http does not
			// allow that, but a custom Transport might): keep going.
			rest, err := io.ReadAll(lr)
			return append(buf, rest...), err
		}
		n, err := lr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}
