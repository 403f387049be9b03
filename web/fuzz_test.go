package web

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzParseFetchURL(f *testing.F) {
	for _, s := range []string{"http://example.com/", "https://a:b@c/", "ftp://x", "http://[::1]:80/", "//x", "http:x", "HTTP://EXAMPLE.COM:65536/", "http://%41/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := parseFetchURL(raw, 200)
		if err != nil {
			if err.Code != CodeInvalidURL && err.Code != CodeBlockedURL {
				t.Fatalf("parseFetchURL(%q) code %s", raw, err.Code)
			}
			return
		}
		if len(raw) > 200 || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil || u.Hostname() == "" || u.Fragment != "" {
			t.Fatalf("parseFetchURL(%q) accepted %#v", raw, u)
		}
		if o := origin(u); !strings.HasPrefix(o, u.Scheme+"://") {
			t.Fatalf("origin(%q) = %q", raw, o)
		}
	})
}

func FuzzCapChars(f *testing.F) {
	f.Add("héllo😀", 3)
	f.Add("\xff\xfe", 1)
	f.Fuzz(func(t *testing.T, s string, n int) {
		if n < 0 || n > 1<<20 {
			return
		}
		got, cut := capChars(s, n)
		if !strings.HasPrefix(s, got) {
			t.Fatalf("capChars(%q, %d) = %q, not a prefix", s, n, got)
		}
		if cut != (got != s) {
			t.Fatalf("capChars(%q, %d) cut=%v with %q", s, n, cut, got)
		}
		if c := utf8.RuneCountInString(got); c > n {
			t.Fatalf("capChars(%q, %d) kept %d characters", s, n, c)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("capChars(%q, %d) split a character: %q", s, n, got)
		}
	})
}

func FuzzDecodeBody(f *testing.F) {
	f.Add([]byte("caf\xe9"), "text/plain; charset=iso-8859-1", false)
	f.Add([]byte(`<meta charset="shift_jis">\x93`), "text/html", true)
	f.Add([]byte("\xff\xfeh\x00"), "text/plain", false)
	f.Fuzz(func(t *testing.T, body []byte, header string, cut bool) {
		ct, err := classify(header)
		if err != nil {
			return
		}
		if s := decodeBody(body, ct, cut); !utf8.ValidString(s) {
			t.Fatalf("decodeBody(%q, %q) = %q: not valid UTF-8", body, header, s)
		}
	})
}

func FuzzToMarkdown(f *testing.F) {
	f.Add("<p>a<script>x</script><b>b</b></p>")
	f.Add(strings.Repeat("<div>", 600))
	f.Add("<table><tr><td>1</td></tr></table><noscript>n</noscript>")
	f.Fuzz(func(t *testing.T, doc string) {
		ToMarkdown(doc, "https://example.com/") // must not panic or recurse without bound
	})
}
