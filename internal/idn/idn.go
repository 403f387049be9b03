package idn

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// Host returns name in ASCII (xn--) form. ASCII names are returned as
// they are; a name IDNA rejects is an error that says so.
func Host(name string) (string, error) {
	if isASCII(name) {
		return name, nil
	}
	a, err := idna.Lookup.ToASCII(name)
	if err != nil {
		return "", fmt.Errorf("%q is not a valid internationalised domain name: %v", name, err)
	}
	return a, nil
}

// Entry converts the name in a policy entry (host, *.host or host:port);
// addresses, CIDRs and ASCII entries are returned as they are.
func Entry(e string) (string, error) {
	if isASCII(e) {
		return e, nil
	}
	wild, rest := "", e
	if r, ok := strings.CutPrefix(e, "*."); ok {
		wild, rest = "*.", r
	}
	name, port := rest, ""
	if i := strings.LastIndexByte(rest, ':'); i >= 0 && strings.Count(rest, ":") == 1 {
		name, port = rest[:i], rest[i:]
	}
	a, err := Host(name)
	if err != nil {
		return "", err
	}
	return wild + a + port, nil
}

// Entries converts every entry with Entry, into a new slice.
func Entries(entries []string) ([]string, error) {
	out := make([]string, len(entries))
	for i, e := range entries {
		a, err := Entry(e)
		if err != nil {
			return nil, fmt.Errorf("entry %q: %w", e, err)
		}
		out[i] = a
	}
	return out, nil
}

// Target converts the host of a target of dsh policy check: a URL, host
// or host:port. Input that does not parse is returned as it is, for
// netpolicy to reject with its own reason.
func Target(s string) (string, error) {
	if isASCII(s) {
		return s, nil
	}
	if !strings.Contains(s, "://") {
		return Entry(s)
	}
	u, err := url.Parse(s)
	if err != nil || isASCII(u.Hostname()) {
		return s, nil
	}
	a, err := Host(u.Hostname())
	if err != nil {
		return "", err
	}
	if p := u.Port(); p != "" {
		a = net.JoinHostPort(a, p)
	}
	u.Host = a
	return u.String(), nil
}
