package web

import (
	"net"
	"net/url"
	"strconv"
	"strings"
)

// parseFetchURL applies the reference URL rules in their order: the length
// of the raw string first, then parsing, then scheme and credentials.
// Policy (where the URL may lead) is the Dialer's job, at connect time.
func parseFetchURL(raw string, maxLen int) (*url.URL, *Error) {
	if len(raw) > maxLen {
		return nil, newError(CodeInvalidURL, truncateForMessage(raw), "URL is %d bytes long, over the limit of %d; shorten it", len(raw), maxLen)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, wrapError(CodeInvalidURL, raw, err, "cannot parse URL %q", raw)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		if u.Scheme == "" {
			return nil, newError(CodeInvalidURL, raw, "URL %q has no scheme; give an absolute http:// or https:// URL", raw)
		}
		// The reference fetcher's class: a URL of another scheme is not
		// a fetchable URL at all (its own tests say WEB_INVALID_URL).
		return nil, newError(CodeInvalidURL, raw, "URL %q has scheme %q; only http and https can be fetched", raw, u.Scheme)
	}
	if u.User != nil {
		return nil, newError(CodeBlockedURL, redact(u), "URL %q carries credentials (user info); fetches never send credentials, remove them", redact(u))
	}
	if u.Opaque != "" || u.Hostname() == "" {
		return nil, newError(CodeInvalidURL, raw, "URL %q has no host", raw)
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return nil, newError(CodeInvalidURL, raw, "URL %q has port %q; a port is 1-65535", raw, p)
		}
	}
	// The fragment never goes on the wire; drop it so results and
	// redirect checks see what was requested.
	u.Fragment, u.RawFragment = "", ""
	return u, nil
}

// origin is scheme://host:port with the host lower-cased and the port
// made explicit, so http://a/ and http://A:80/ compare equal.
func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return u.Scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// redact returns u with its user info replaced, for messages.
func redact(u *url.URL) string {
	c := *u
	if c.User != nil {
		c.User = url.User("REDACTED")
	}
	return c.String()
}

func truncateForMessage(s string) string {
	const n = 120
	if len(s) <= n {
		return s
	}
	return truncateChars(s, n) + "…"
}
