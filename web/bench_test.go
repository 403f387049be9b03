package web

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/netpolicy"
)

// page1MB is a 1 MB HTML document.
func page1MB() []byte {
	var b strings.Builder
	b.WriteString("<!doctype html><html><head><title>bench</title></head><body>\n")
	para := "<p>Lorem ipsum dolor sit amet, <a href=\"/x\">consectetur</a> adipiscing elit, sed do eiusmod tempor.</p>\n"
	for b.Len() < 1<<20-len("</body></html>\n")-len(para) {
		b.WriteString(para)
	}
	b.WriteString("</body></html>\n")
	return []byte(b.String())
}

// BenchmarkFetch1MB compares, in the same run, GETting a 1 MB HTML page
// from loopback with a plain http.Client and with the guarded client
// (netpolicy.Dialer's transport: resolve, policy check, checked dial,
// Control re-check), each reading the whole body; then the full Fetcher
// (guarded client plus byte cap, charset decoding and character cap).
// keepalive reuses one connection (the dial cost is paid once);
// newconn dials for every request, so the dialer's checks are in every
// iteration.
func BenchmarkFetch1MB(b *testing.B) {
	page := page1MB()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Length", strconv.Itoa(len(page)))
		w.Write(page)
	}))
	defer srv.Close()
	p, err := netpolicy.New(netpolicy.Config{Default: "public", Ports: []int{80, 443}, Allow: []string{srv.Listener.Addr().String()}})
	if err != nil {
		b.Fatal(err)
	}
	get := func(b *testing.B, c *http.Client) {
		b.SetBytes(int64(len(page)))
		b.ReportAllocs()
		for b.Loop() {
			resp, err := c.Get(srv.URL)
			if err != nil {
				b.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || len(body) != len(page) {
				b.Fatalf("read %d bytes, %v", len(body), err)
			}
		}
	}
	for _, mode := range []string{"keepalive", "newconn"} {
		plainT := &http.Transport{Proxy: nil, DisableKeepAlives: mode == "newconn"}
		guardT := (&netpolicy.Dialer{Policy: p}).Transport()
		guardT.DisableKeepAlives = mode == "newconn"
		b.Run(mode+"/plain", func(b *testing.B) { get(b, &http.Client{Transport: plainT}) })
		b.Run(mode+"/guarded", func(b *testing.B) { get(b, &http.Client{Transport: guardT}) })
		b.Run(mode+"/fetcher", func(b *testing.B) {
			f, err := NewFetcher(&FetchOptions{Transport: guardT, MaxChars: 2 << 20})
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(page)))
			b.ReportAllocs()
			for b.Loop() {
				res, err := f.Fetch(context.Background(), srv.URL)
				if err != nil || len(res.Content) != len(page) || res.Truncated {
					b.Fatalf("Fetch: %v", err)
				}
			}
		})
		plainT.CloseIdleConnections()
		guardT.CloseIdleConnections()
	}
}
