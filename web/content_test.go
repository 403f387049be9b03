package web

import (
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		header   string
		wantKind Kind
		wantCode Code
	}{
		{"text/html", KindHTML, ""},
		{"text/html; charset=utf-8", KindHTML, ""},
		{"TEXT/HTML; Charset=UTF-8", KindHTML, ""},
		{"application/xhtml+xml", KindHTML, ""},
		{"text/plain", KindText, ""},
		{"text/markdown; charset=iso-8859-1", KindText, ""},
		{"text/csv", KindText, ""},
		{"application/json", KindText, ""},
		{"application/xml", KindText, ""},
		{"application/ld+json", KindText, ""},
		{"application/atom+xml", KindText, ""},
		{"application/problem+json; charset=utf-8", KindText, ""},
		{"", "", CodeUnsupportedContent},
		{"application/octet-stream", "", CodeUnsupportedContent},
		{"image/png", "", CodeUnsupportedContent},
		{"application/pdf", "", CodeUnsupportedContent},
		{"application/javascript", "", CodeUnsupportedContent},
		{"text/html; charset=no-such-charset", "", CodeUnsupportedContent},
		{"text/html; charset=", "", CodeUnsupportedContent},
		{";;;", "", CodeUnsupportedContent},
	}
	for _, tt := range tests {
		ct, err := classify(tt.header)
		if tt.wantCode != "" {
			if err == nil || err.Code != tt.wantCode {
				t.Errorf("classify(%q) = %v, %v; want error %s", tt.header, ct.kind, err, tt.wantCode)
			}
			continue
		}
		if err != nil || ct.kind != tt.wantKind {
			t.Errorf("classify(%q) = %v, %v; want %v", tt.header, ct.kind, err, tt.wantKind)
		}
	}
}

func mustClassify(t *testing.T, header string) contentType {
	t.Helper()
	ct, err := classify(header)
	if err != nil {
		t.Fatalf("classify(%q): %v", header, err)
	}
	return ct
}

func TestDecodeBodyCharset(t *testing.T) {
	tests := []struct {
		name   string
		header string
		body   string
		want   string
	}{
		{"no charset is UTF-8", "text/plain", "caf\xc3\xa9", "café"},
		{"header latin-1", "text/plain; charset=iso-8859-1", "caf\xe9", "café"},
		{"header windows-1252", "text/html; charset=windows-1252", "\x93q\x94", "“q”"},
		{"header shift_jis", "text/plain; charset=shift_jis", "\x93\xfa\x96\x7b", "日本"},
		{"meta charset", "text/html", `<meta charset="iso-8859-1"><p>caf` + "\xe9", `<meta charset="iso-8859-1"><p>café`},
		{"meta http-equiv", "text/html", `<meta http-equiv="Content-Type" content="text/html; charset=windows-1252"><p>` + "\x93", `<meta http-equiv="Content-Type" content="text/html; charset=windows-1252"><p>“`},
		{"header wins over meta", "text/html; charset=utf-8", `<meta charset="iso-8859-1">caf` + "\xc3\xa9", `<meta charset="iso-8859-1">café`},
		{"meta ignored for text", "text/plain", `<meta charset="iso-8859-1">caf` + "\xc3\xa9", `<meta charset="iso-8859-1">café`},
		{"meta utf-16 means utf-8", "text/html", `<meta charset="utf-16">caf` + "\xc3\xa9", `<meta charset="utf-16">café`},
		{"unknown meta label falls back to utf-8", "text/html", `<meta charset="klingon">caf` + "\xc3\xa9", `<meta charset="klingon">café`},
		{"meta after 1024 bytes ignored", "text/html", strings.Repeat(" ", 1100) + `<meta charset="iso-8859-1">` + "\xc3\xa9", strings.Repeat(" ", 1100) + `<meta charset="iso-8859-1">é`},
		{"BOM utf-8 dropped", "text/plain", "\xef\xbb\xbfhi", "hi"},
		{"BOM utf-16le overrides header", "text/plain; charset=iso-8859-1", "\xff\xfeh\x00i\x00", "hi"},
		{"invalid utf-8 replaced", "text/plain", "a\xffb", "a\uFFFDb"},
		// Long ASCII before the first non-ASCII byte must not tip a
		// guess towards windows-1252.
		{"utf-8 after long ascii", "text/html", strings.Repeat("a", 2000) + "\xc3\xa9", strings.Repeat("a", 2000) + "é"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decodeBody([]byte(tt.body), mustClassify(t, tt.header), false)
			if got != tt.want {
				t.Errorf("decodeBody(%q, %q) = %q, want %q", tt.body, tt.header, got, tt.want)
			}
		})
	}
}

func TestDecodeBodyCutDropsSplitCharacter(t *testing.T) {
	// A byte cap that cut é (UTF-8) or 日 (Shift_JIS) in half leaves no
	// replacement character behind.
	if got := decodeBody([]byte("ab\xc3"), mustClassify(t, "text/plain"), true); got != "ab" {
		t.Errorf("utf-8 cut: got %q, want %q", got, "ab")
	}
	if got := decodeBody([]byte("ab\x93"), mustClassify(t, "text/plain; charset=shift_jis"), true); got != "ab" {
		t.Errorf("shift_jis cut: got %q, want %q", got, "ab")
	}
	// Without a cut, a broken tail is shown, not hidden.
	if got := decodeBody([]byte("ab\xc3"), mustClassify(t, "text/plain"), false); got != "ab\uFFFD" {
		t.Errorf("utf-8 uncut: got %q, want %q", got, "ab\uFFFD")
	}
}
