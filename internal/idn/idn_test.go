package idn

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestConversions(t *testing.T) {
	for _, c := range []struct {
		f        func(string) (string, error)
		in, want string
	}{
		{Host, "bücher.example", "xn--bcher-kva.example"},
		{Host, "Bücher.Example", "xn--bcher-kva.example"},
		{Host, "example.com", "example.com"},
		{Host, "１２７。０。０。１", "127.0.0.1"},
		{Entry, "bücher.example:443", "xn--bcher-kva.example:443"},
		{Entry, "*.bücher.example", "*.xn--bcher-kva.example"},
		{Entry, "10.0.0.0/8", "10.0.0.0/8"},
		{Entry, "[::1]:80", "[::1]:80"},
		{Target, "https://bücher.example:8443/x?q=1", "https://xn--bcher-kva.example:8443/x?q=1"},
		{Target, "http://bücher.example/", "http://xn--bcher-kva.example/"},
		{Target, "bücher.example", "xn--bcher-kva.example"},
		{Target, "https://example.com/ü", "https://example.com/ü"},
	} {
		got, err := c.f(c.in)
		if err != nil || got != c.want {
			t.Errorf("%q -> %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestInvalidNameSaysSo(t *testing.T) {
	for _, in := range []string{"a\u200db.example", "xn--ü.example"} {
		if _, err := Entry(in); err == nil || !strings.Contains(err.Error(), "not a valid internationalised domain name") {
			t.Errorf("Entry(%q) = %v, want an error naming the problem", in, err)
		}
	}
}

// The point of the package: what it produces is what net/http dials.
// The transport's dial hook records the address net/http connects to
// (after its own IDNA conversion) and refuses, so nothing is sent.
func TestSameNameAsNetHTTP(t *testing.T) {
	for _, raw := range []string{"http://bücher.example/", "http://ＥＸＡＭＰＬＥ.com/", "http://straße.example:8080/x"} {
		var dialed string
		refuse := errors.New("recorded, not dialed")
		client := &http.Client{Transport: &http.Transport{
			Proxy: nil,
			DialContext: func(_ context.Context, _, addr string) (net.Conn, error) {
				dialed = addr
				return nil, refuse
			},
		}}
		if _, err := client.Get(raw); !errors.Is(err, refuse) {
			t.Fatalf("GET %s: %v", raw, err)
		}
		conv, err := Target(raw)
		if err != nil {
			t.Fatal(err)
		}
		u, err := url.Parse(conv)
		if err != nil {
			t.Fatal(err)
		}
		want := u.Host
		if u.Port() == "" {
			want = net.JoinHostPort(u.Hostname(), "80")
		}
		if dialed != want {
			t.Errorf("%s: net/http dials %q, Target gives %q", raw, dialed, want)
		}
	}
}
