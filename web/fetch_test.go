package web

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"
)

func htmlHandler(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, body)
	}
}

func TestFetchURLValidation(t *testing.T) {
	srv := newServer(t, htmlHandler("ok"))
	f, log := newTestFetcher(t, FetchOptions{}, []string{srv.hostPort()}, nil)
	base := srv.URL + "/"
	long := base + strings.Repeat("a", DefaultMaxURLLength-len(base))
	if len(long) != DefaultMaxURLLength {
		t.Fatalf("test URL is %d bytes", len(long))
	}
	fetchOK(t, f, long) // exactly at the limit is fine
	before := srv.hits.Load()

	tests := []struct {
		url  string
		want Code
	}{
		{long + "a", CodeInvalidURL},
		{"http://[::1", CodeInvalidURL},
		{"://nothing", CodeInvalidURL},
		{"/relative/path", CodeInvalidURL},
		{"http:opaque", CodeInvalidURL},
		{"http://", CodeInvalidURL},
		{"http://127.0.0.1:0/", CodeInvalidURL},
		{"http://127.0.0.1:99999/", CodeInvalidURL},
		{"ftp://127.0.0.1/", CodeInvalidURL},
		{"file:///etc/passwd", CodeInvalidURL},
		{"javascript:alert(1)", CodeInvalidURL},
		{"gopher://127.0.0.1:70/", CodeInvalidURL},
		{"http://user:secret@" + srv.hostPort() + "/", CodeBlockedURL},
		{"http://user@" + srv.hostPort() + "/", CodeBlockedURL},
	}
	for _, tt := range tests {
		we := fetchErr(t, f, tt.url)
		if we.Code != tt.want {
			t.Errorf("Fetch(%.60q) = %v, want %s", tt.url, we, tt.want)
		}
		if strings.Contains(we.Error(), "secret") {
			t.Errorf("Fetch(%q) error repeats the password: %v", tt.url, we)
		}
	}
	if n := srv.hits.Load() - before; n != 0 {
		t.Errorf("invalid URLs reached the server %d times", n)
	}
	if n := len(log.list()); n != 1 {
		t.Errorf("%d connects, want 1 (the valid fetch)", n)
	}
}

func TestFetchRequestHygiene(t *testing.T) {
	var got []*http.Request
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Clone(context.Background()))
		if r.URL.Path == "/start" {
			http.SetCookie(w, &http.Cookie{Name: "session", Value: "s3cret", Path: "/"})
			http.Redirect(w, r, "/end", http.StatusFound)
			return
		}
		htmlHandler("done")(w, r)
	})
	f, _ := newTestFetcher(t, FetchOptions{}, []string{srv.hostPort()}, nil)
	fetchOK(t, f, srv.URL+"/start#frag")
	fetchOK(t, f, srv.URL+"/end") // a second fetch: still no cookie
	if len(got) != 3 {
		t.Fatalf("server saw %d requests, want 3", len(got))
	}
	for _, r := range got {
		if r.Method != http.MethodGet {
			t.Errorf("%s %s: method %s, want GET", r.Method, r.URL, r.Method)
		}
		if a := r.Header.Get("Accept"); a != acceptHeader {
			t.Errorf("%s: Accept = %q, want %q", r.URL, a, acceptHeader)
		}
		for _, h := range []string{"Cookie", "Authorization", "Proxy-Authorization"} {
			if v := r.Header.Get(h); v != "" {
				t.Errorf("%s: sent %s: %q", r.URL, h, v)
			}
		}
	}
}

func TestFetchResult(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/page":
			htmlHandler("<h1>Hi</h1>")(w, r)
		case "/json":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"a":1}`)
		case "/missing":
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, "<p>no such page</p>")
		case "/error":
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, "boom")
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		}
	})
	f, _ := newTestFetcher(t, FetchOptions{}, []string{srv.hostPort()}, nil)
	tests := []struct {
		path    string
		status  int
		kind    Kind
		content string
	}{
		{"/page", 200, KindHTML, "<h1>Hi</h1>"},
		{"/json", 200, KindText, `{"a":1}`},
		{"/missing", 404, KindHTML, "<p>no such page</p>"}, // non-2xx is a result
		{"/error", 500, KindText, "boom"},
		{"/empty", 204, KindText, ""},
	}
	for _, tt := range tests {
		res := fetchOK(t, f, srv.URL+tt.path)
		want := Result{URL: srv.URL + tt.path, StatusCode: tt.status, Kind: tt.kind, Content: tt.content}
		if *res != want {
			t.Errorf("Fetch(%s) = %+v, want %+v", tt.path, *res, want)
		}
	}
}

func TestFetchFollowsSameOriginRedirects(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/dir/final" {
			htmlHandler("final")(w, r)
			return
		}
		code, _ := strconv.Atoi(r.URL.Query().Get("code"))
		w.Header().Set("Location", r.URL.Query().Get("to"))
		w.WriteHeader(code)
	})
	f, _ := newTestFetcher(t, FetchOptions{}, []string{srv.hostPort()}, nil)
	host := srv.hostPort()
	locations := []string{
		"/dir/final",                    // absolute path
		"final",                         // relative to /dir/
		"http://" + host + "/dir/final", // absolute, same origin
		"//" + host + "/dir/final",      // scheme-relative, same origin
		"HTTP://" + host + "/dir/final", // scheme case does not matter
	}
	for _, code := range []int{301, 302, 303, 307, 308} {
		for _, loc := range locations {
			u := fmt.Sprintf("%s/dir/start?code=%d&to=%s", srv.URL, code, urlQueryEscape(loc))
			res := fetchOK(t, f, u)
			if res.StatusCode != 200 || res.URL != srv.URL+"/dir/final" || res.Content != "final" {
				t.Errorf("HTTP %d Location %q: got %+v, want the final page", code, loc, res)
			}
		}
	}
	// Other 3xx statuses are results, not redirects.
	for _, code := range []int{300, 304, 305, 306} {
		u := fmt.Sprintf("%s/dir/start?code=%d&to=/dir/final", srv.URL, code)
		if res := fetchOK(t, f, u); res.StatusCode != code {
			t.Errorf("HTTP %d: got status %d, want the %d response as the result", code, res.StatusCode, code)
		}
	}
}

func urlQueryEscape(s string) string { return url.QueryEscape(s) }

func TestFetchRedirectBudget(t *testing.T) {
	// /r/N redirects to /r/N+1 until N == limit, which answers 200.
	var limit int
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/r/"))
		if n >= limit {
			htmlHandler("end")(w, r)
			return
		}
		if n == DefaultMaxRedirects && r.URL.Query().Has("nolocation") {
			w.WriteHeader(http.StatusFound) // no Location
			return
		}
		http.Redirect(w, r, fmt.Sprintf("/r/%d?%s", n+1, r.URL.RawQuery), http.StatusFound)
	})
	f, _ := newTestFetcher(t, FetchOptions{}, []string{srv.hostPort()}, nil)

	limit = DefaultMaxRedirects
	if res := fetchOK(t, f, srv.URL+"/r/0"); res.Content != "end" {
		t.Errorf("%d redirects: got %+v, want the end page", limit, res)
	}

	limit = DefaultMaxRedirects + 1
	srv.hits.Store(0)
	we := fetchErr(t, f, srv.URL+"/r/0")
	if we.Code != CodeRedirectBlocked || !strings.Contains(we.Msg, "exceeded") {
		t.Errorf("%d redirects: %v, want %s (exceeded)", limit, we, CodeRedirectBlocked)
	}
	if n := srv.hits.Load(); n != DefaultMaxRedirects+1 {
		t.Errorf("server saw %d requests, want %d (the hop past the budget is never requested)", n, DefaultMaxRedirects+1)
	}
	// The budget is checked before the Location: an exhausted budget wins
	// over a missing Location.
	if we := fetchErr(t, f, srv.URL+"/r/0?nolocation"); we.Code != CodeRedirectBlocked {
		t.Errorf("budget exhausted at a redirect without Location: %v, want %s", we, CodeRedirectBlocked)
	}

	// A smaller configured budget; negative follows none.
	f2, _ := newTestFetcher(t, FetchOptions{MaxRedirects: 2}, []string{srv.hostPort()}, nil)
	if we := fetchErr(t, f2, srv.URL+"/r/0"); we.Code != CodeRedirectBlocked {
		t.Errorf("MaxRedirects 2: %v, want %s", we, CodeRedirectBlocked)
	}
	f3, _ := newTestFetcher(t, FetchOptions{MaxRedirects: -1}, []string{srv.hostPort()}, nil)
	if we := fetchErr(t, f3, srv.URL+"/r/0"); we.Code != CodeRedirectBlocked {
		t.Errorf("MaxRedirects -1: %v, want %s", we, CodeRedirectBlocked)
	}
}

func TestFetchRedirectWithoutLocation(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusMovedPermanently) })
	f, _ := newTestFetcher(t, FetchOptions{}, []string{srv.hostPort()}, nil)
	if we := fetchErr(t, f, srv.URL+"/"); we.Code != CodeProviderError {
		t.Errorf("redirect without Location: %v, want %s", we, CodeProviderError)
	}
}

func TestFetchCrossOriginRedirect(t *testing.T) {
	other := newServer(t, htmlHandler("other"))
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/x", http.StatusFound)
	})
	allow := []string{srv.hostPort(), other.hostPort()}

	f, _ := newTestFetcher(t, FetchOptions{}, allow, nil)
	we := fetchErr(t, f, srv.URL+"/")
	if we.Code != CodeRedirectBlocked || we.URL != other.URL+"/x" {
		t.Errorf("cross-origin redirect: %v (URL %q), want %s naming %s", we, we.URL, CodeRedirectBlocked, other.URL+"/x")
	}
	if n := other.hits.Load(); n != 0 {
		t.Errorf("the other origin was requested %d times", n)
	}

	// Allowed explicitly, and the policy admits the target: followed.
	f2, _ := newTestFetcher(t, FetchOptions{CrossOriginRedirects: true}, allow, nil)
	if res := fetchOK(t, f2, srv.URL+"/"); res.URL != other.URL+"/x" || res.Content != "other" {
		t.Errorf("cross-origin redirect allowed: got %+v", res)
	}
}

func TestFetchContentTypes(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if ct := r.URL.Query().Get("ct"); ct != "-" {
			w.Header().Set("Content-Type", ct)
		} else {
			w.Header()["Content-Type"] = nil // no sniffing by net/http
		}
		w.Write([]byte("body"))
	})
	f, _ := newTestFetcher(t, FetchOptions{}, []string{srv.hostPort()}, nil)
	tests := []struct {
		ct   string
		kind Kind
		code Code
	}{
		{"text/html", KindHTML, ""},
		{"application/xhtml+xml", KindHTML, ""},
		{"text/plain", KindText, ""},
		{"text/css", KindText, ""},
		{"application/json", KindText, ""},
		{"application/xml", KindText, ""},
		{"application/vnd.api+json", KindText, ""},
		{"image/svg+xml", KindText, ""},
		{"image/png", "", CodeUnsupportedContent},
		{"application/octet-stream", "", CodeUnsupportedContent},
		{"-", "", CodeUnsupportedContent},
		{"text/plain; charset=x-unknown-7", "", CodeUnsupportedContent},
	}
	for _, tt := range tests {
		u := srv.URL + "/?ct=" + urlQueryEscape(tt.ct)
		res, err := f.Fetch(context.Background(), u)
		if tt.code != "" {
			if CodeOf(err) != tt.code {
				t.Errorf("Content-Type %q: %v, %v; want %s", tt.ct, res, err, tt.code)
			}
			continue
		}
		if err != nil || res.Kind != tt.kind {
			t.Errorf("Content-Type %q: %+v, %v; want kind %s", tt.ct, res, err, tt.kind)
		}
	}
}

func TestFetchCharset(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/latin1":
			w.Header().Set("Content-Type", "text/plain; charset=ISO-8859-1")
			w.Write([]byte("caf\xe9"))
		case "/meta":
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte(`<html><head><meta charset="windows-1252"></head><body>` + "\x93ok\x94</body></html>"))
		case "/sjis":
			w.Header().Set("Content-Type", "text/plain; charset=Shift_JIS")
			w.Write([]byte("\x93\xfa\x96\x7b"))
		}
	})
	f, _ := newTestFetcher(t, FetchOptions{}, []string{srv.hostPort()}, nil)
	if got := fetchOK(t, f, srv.URL+"/latin1").Content; got != "café" {
		t.Errorf("latin-1 body = %q, want café", got)
	}
	if got := fetchOK(t, f, srv.URL+"/meta").Content; !strings.Contains(got, "“ok”") {
		t.Errorf("<meta charset=windows-1252> body = %q, want “ok”", got)
	}
	if got := fetchOK(t, f, srv.URL+"/sjis").Content; got != "日本" {
		t.Errorf("shift_jis body = %q, want 日本", got)
	}
}

func TestFetchByteCap(t *testing.T) {
	const max = 100
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		body := strings.Repeat("a", n)
		w.Header().Set("Content-Type", "text/plain")
		if r.URL.Query().Has("declared") {
			w.Header().Set("Content-Length", strconv.Itoa(n))
			w.Write([]byte(body))
			return
		}
		// Stream it without a Content-Length.
		w.Write([]byte(body[:n/2]))
		w.(http.Flusher).Flush()
		w.Write([]byte(body[n/2:]))
	})
	f, _ := newTestFetcher(t, FetchOptions{MaxBytes: max}, []string{srv.hostPort()}, nil)

	if we := fetchErr(t, f, fmt.Sprintf("%s/?declared&n=%d", srv.URL, max+1)); we.Code != CodeTooLarge {
		t.Errorf("Content-Length %d over cap %d: %v, want %s", max+1, max, we, CodeTooLarge)
	}
	if res := fetchOK(t, f, fmt.Sprintf("%s/?declared&n=%d", srv.URL, max)); res.Truncated || len(res.Content) != max {
		t.Errorf("Content-Length at the cap: truncated=%v len=%d, want whole", res.Truncated, len(res.Content))
	}
	if res := fetchOK(t, f, fmt.Sprintf("%s/?n=%d", srv.URL, max)); res.Truncated || len(res.Content) != max {
		t.Errorf("streamed body at the cap: truncated=%v len=%d, want whole", res.Truncated, len(res.Content))
	}
	if res := fetchOK(t, f, fmt.Sprintf("%s/?n=%d", srv.URL, 10*max)); !res.Truncated || len(res.Content) != max {
		t.Errorf("streamed body over the cap: truncated=%v len=%d, want cut to %d and truncated", res.Truncated, len(res.Content), max)
	}
}

func TestFetchByteCapKeepsCharactersWhole(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		body := strings.Repeat("é", 100) // 200 bytes, streamed
		w.Write([]byte(body[:100]))
		w.(http.Flusher).Flush()
		w.Write([]byte(body[100:]))
	})
	f, _ := newTestFetcher(t, FetchOptions{MaxBytes: 101}, []string{srv.hostPort()}, nil)
	res := fetchOK(t, f, srv.URL)
	if !res.Truncated || res.Content != strings.Repeat("é", 50) {
		t.Errorf("cut inside é: got %q (truncated %v), want 50 whole é", res.Content, res.Truncated)
	}
}

func TestFetchCharCap(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte(strings.Repeat("😀", 30)))
	})
	f, _ := newTestFetcher(t, FetchOptions{MaxChars: 30}, []string{srv.hostPort()}, nil)
	if res := fetchOK(t, f, srv.URL); res.Truncated || utf8.RuneCountInString(res.Content) != 30 {
		t.Errorf("30 characters under a 30 cap: truncated=%v, %d chars", res.Truncated, utf8.RuneCountInString(res.Content))
	}
	f2, _ := newTestFetcher(t, FetchOptions{MaxChars: 7}, []string{srv.hostPort()}, nil)
	if res := fetchOK(t, f2, srv.URL); !res.Truncated || res.Content != strings.Repeat("😀", 7) {
		t.Errorf("30 characters under a 7 cap: %q truncated=%v", res.Content, res.Truncated)
	}
}

// stallServer answers /head after the client gives up and /body with a
// header and half a body, then nothing.
func stallServer(t *testing.T, onStall func()) *countingServer {
	release := make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/body" {
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Content-Length", "1000")
			w.Write([]byte("partial"))
			w.(http.Flusher).Flush()
		}
		if onStall != nil {
			onStall()
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	// Registered after newServer's Close, so it runs first (LIFO).
	t.Cleanup(func() { close(release) })
	return srv
}

func TestFetchTimeout(t *testing.T) {
	srv := stallServer(t, nil)
	// The test waits for the deadline, but asserts only what it says.
	f, _ := newTestFetcher(t, FetchOptions{Timeout: 50 * time.Millisecond}, []string{srv.hostPort()}, nil)
	for _, path := range []string{"/head", "/body"} {
		if we := fetchErr(t, f, srv.URL+path); we.Code != CodeTimeout {
			t.Errorf("stall at %s: %v, want %s", path, we, CodeTimeout)
		}
	}
}

func TestFetchCallerCancel(t *testing.T) {
	// The server cancels the current fetch's context once the request
	// (and, for /body, half the body) has arrived.
	var current atomic.Pointer[context.CancelFunc]
	srv := stallServer(t, func() { (*current.Load())() })
	f, _ := newTestFetcher(t, FetchOptions{}, []string{srv.hostPort()}, nil)
	for _, path := range []string{"/head", "/body"} {
		ctx, cancel := context.WithCancel(context.Background())
		current.Store(&cancel)
		_, err := f.Fetch(ctx, srv.URL+path)
		cancel()
		if CodeOf(err) != CodeAborted {
			t.Errorf("caller cancel at %s: %v, want %s", path, err, CodeAborted)
		}
	}
	// Cancelled before it started.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.Fetch(ctx, srv.URL+"/head"); CodeOf(err) != CodeAborted {
		t.Errorf("fetch with a cancelled context: %v, want %s", err, CodeAborted)
	}
}

func TestFetchNetworkFailure(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	hp := srv.Listener.Addr().String()
	srv.Close() // nothing listens on that loopback port now
	f, _ := newTestFetcher(t, FetchOptions{}, []string{hp}, nil)
	if we := fetchErr(t, f, "http://"+hp+"/"); we.Code != CodeConnectFailed {
		t.Errorf("connection refused: %v, want %s", we, CodeConnectFailed)
	}
}

func TestFetchDefaultPolicyRefusesLoopback(t *testing.T) {
	srv := newServer(t, htmlHandler("secret"))
	f, log := newTestFetcher(t, FetchOptions{}, nil, nil) // no allow entry
	we := fetchErr(t, f, srv.URL+"/")
	if we.Code != CodeNetDenied || we.Reason() == "" {
		t.Errorf("loopback under the default policy: %v (reason %q), want %s with a reason", we, we.Reason(), CodeNetDenied)
	}
	if srv.hits.Load() != 0 || len(log.list()) != 0 {
		t.Errorf("denied fetch reached the server (%d hits, connects %v)", srv.hits.Load(), log.list())
	}
}

func TestNewFetcherDefaults(t *testing.T) {
	// The zero options build a fetcher under the web default policy; it
	// refuses loopback without a connect (no resolver needed for an IP).
	f, err := NewFetcher(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	srv := newServer(t, htmlHandler("x"))
	if _, err := f.Fetch(context.Background(), srv.URL); CodeOf(err) != CodeNetDenied {
		t.Errorf("default fetcher on loopback: %v, want %s", err, CodeNetDenied)
	}
	if srv.hits.Load() != 0 {
		t.Errorf("default fetcher reached loopback")
	}
	if err := f.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestFetcherHasNoProxyAndNoJar(t *testing.T) {
	d, _ := testDialer(t, nil, nil)
	f, err := NewFetcher(&FetchOptions{Dialer: d})
	if err != nil {
		t.Fatal(err)
	}
	tr, ok := f.client.Transport.(*http.Transport)
	if !ok {
		t.Fatalf("transport is %T, want *http.Transport", f.client.Transport)
	}
	if tr.Proxy != nil {
		t.Errorf("Transport.Proxy is set: an HTTP(S)_PROXY would carry requests past the policy check")
	}
	//lint:ignore SA1019 the deprecated dial hooks must be unset too, or they would bypass DialContext
	if tr.DialContext == nil || tr.DialTLSContext != nil || tr.Dial != nil || tr.DialTLS != nil {
		t.Errorf("transport does not dial only through the guarded DialContext")
	}
	if f.client.Jar != nil {
		t.Errorf("client has a cookie jar")
	}
}
