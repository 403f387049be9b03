package netpolicy

import (
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Target is a destination as dsh will dial it.
type Target struct {
	// Scheme is "http" or "https" for a URL, "" otherwise.
	Scheme string
	// Host is the normalised host: a lower-case ASCII name without
	// trailing dot, or the canonical spelling of an address.
	Host string
	// Addr is valid when the host is an address (in any spelling).
	Addr netip.Addr
	// Port is the destination port; the scheme's default for a URL
	// without one; 0 when a host was given without port or scheme.
	Port uint16
}

// HostPort returns host:port for dialling (brackets around IPv6).
func (t Target) HostPort() string {
	return net.JoinHostPort(t.Host, strconv.Itoa(int(t.Port)))
}

const maxTargetLen = 8192

// ParseTarget parses a URL (http or https), host, host:port, IP, IP:port,
// [IPv6] or [IPv6]:port, normalised as net/http would dial it (see
// parseHost). Errors match ErrInvalidTarget and say why.
func ParseTarget(s string) (Target, error) {
	if err := checkRaw(s); err != nil {
		return Target{}, err
	}
	if strings.Contains(s, "://") {
		_, t, err := ParseURL(s)
		return t, err
	}
	if strings.ContainsAny(s, "/?#") {
		return Target{}, invalidf(s, "not a host or host:port; URLs need http:// or https://")
	}
	host, port := s, uint16(0)
	switch {
	case strings.HasPrefix(s, "["):
		i := strings.IndexByte(s, ']')
		if i < 0 {
			return Target{}, invalidf(s, "unbalanced '['")
		}
		host = s[:i+1]
		if rest := s[i+1:]; rest != "" {
			if rest[0] != ':' {
				return Target{}, invalidf(s, "unexpected %q after ']'", rest)
			}
			p, err := parsePort(rest[1:])
			if err != nil {
				return Target{}, invalidf(s, "%v", err)
			}
			port = p
		}
	case strings.Count(s, ":") == 1:
		i := strings.IndexByte(s, ':')
		p, err := parsePort(s[i+1:])
		if err != nil {
			return Target{}, invalidf(s, "%v", err)
		}
		host, port = s[:i], p
	}
	info, err := parseHostBracket(s, host)
	if err != nil {
		return Target{}, err
	}
	return Target{Host: info.String(), Addr: info.addr, Port: port}, nil
}

// ParseURL parses an http or https URL for fetching and returns it with
// its host rewritten to the normalised form (so what is fetched is what
// was judged) together with its Target. It rejects other schemes,
// userinfo, percent-encoded hosts, backslashes, whitespace, control
// characters and invalid ports.
func ParseURL(raw string) (*url.URL, Target, error) {
	if err := checkRaw(raw); err != nil {
		return nil, Target{}, err
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, Target{}, invalidf(raw, "not a valid URL: %v", unwrapURLError(err))
	}
	scheme := strings.ToLower(u.Scheme)
	var def uint16
	switch scheme {
	case "http":
		def = 80
	case "https":
		def = 443
	case "":
		return nil, Target{}, invalidf(raw, "no scheme; write http:// or https://")
	default:
		return nil, Target{}, invalidf(raw, "scheme %q is not allowed; only http and https", u.Scheme)
	}
	if u.Opaque != "" || !strings.HasPrefix(raw[len(u.Scheme)+1:], "//") {
		return nil, Target{}, invalidf(raw, "missing // after %s:", u.Scheme)
	}
	if u.User != nil {
		return nil, Target{}, invalidf(raw, "URLs with userinfo (user@ or user:pass@) are not accepted; remove the part before '@'")
	}
	// url.Parse decodes some escapes in hosts; judge the raw authority.
	auth := raw[len(u.Scheme)+3:]
	if i := strings.IndexAny(auth, "/?#"); i >= 0 {
		auth = auth[:i]
	}
	if strings.IndexByte(auth, '%') >= 0 {
		return nil, Target{}, invalidf(raw, "percent-encoded host or zone ID; write the host literally")
	}
	if strings.IndexByte(auth, '@') >= 0 {
		return nil, Target{}, invalidf(raw, "'@' in the authority (userinfo trick) is not accepted")
	}
	host := u.Host
	port := def
	if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.HasSuffix(host, "]") {
		p, err := parsePort(host[i+1:])
		if err != nil {
			return nil, Target{}, invalidf(raw, "%v", err)
		}
		host, port = host[:i], p
	}
	if host == "" {
		return nil, Target{}, invalidf(raw, "no host")
	}
	info, err := parseHostBracket(raw, host)
	if err != nil {
		return nil, Target{}, err
	}
	t := Target{Scheme: scheme, Host: info.String(), Addr: info.addr, Port: port}
	out := u // url.Parse's result is ours to rewrite
	out.Scheme = scheme
	h := t.Host
	if info.addr.Is6() {
		h = "[" + h + "]"
	}
	if port != def {
		h += ":" + strconv.Itoa(int(port))
	}
	out.Host = h
	return out, t, nil
}

// checkRaw rejects input that parsers disagree about: whitespace, control
// characters, backslashes, invalid UTF-8, absurd length.
func checkRaw(s string) error {
	if s == "" {
		return invalidf(s, "empty")
	}
	if len(s) > maxTargetLen {
		return invalidf(s[:64]+"...", "longer than %d bytes", maxTargetLen)
	}
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			return invalidf(s, "not valid UTF-8")
		case r == '\\':
			return invalidf(s, "backslash (browsers read it as '/'); use '/'")
		case unicode.IsSpace(r):
			return invalidf(s, "whitespace at byte %d; remove it", i)
		case unicode.IsControl(r):
			return invalidf(s, "control character %U at byte %d", r, i)
		}
	}
	return nil
}

func unwrapURLError(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}
