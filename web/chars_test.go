package web

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCapCharsCountsCodePoints(t *testing.T) {
	tests := []struct {
		in      string
		n       int
		want    string
		wantCut bool
	}{
		{"hello", 5, "hello", false},
		{"hello", 4, "hell", true},
		{"", 0, "", false},
		{"abc", 0, "", true},
		// é is two bytes, one character.
		{"éé", 1, "é", true},
		{"éé", 2, "éé", false},
		// 😀 is one code point but two UTF-16 units: the reference could
		// cut it in half; a cap of 2 must keep "a😀" whole.
		{"a😀b", 2, "a😀", true},
		{"😀😀", 1, "😀", true},
		// Invalid bytes count one each and are never merged.
		{"a\xffb", 2, "a\xff", true},
	}
	for _, tt := range tests {
		got, cut := capChars(tt.in, tt.n)
		if got != tt.want || cut != tt.wantCut {
			t.Errorf("capChars(%q, %d) = %q, %v; want %q, %v", tt.in, tt.n, got, cut, tt.want, tt.wantCut)
		}
	}
}

func TestCapCharsNeverSplitsACharacter(t *testing.T) {
	s := strings.Repeat("aé😀中", 50)
	for n := 0; n <= charCount(s)+1; n++ {
		got, _ := capChars(s, n)
		if !utf8.ValidString(got) {
			t.Fatalf("capChars(s, %d) = %q: split a character", n, got)
		}
		if c := charCount(got); c != min(n, charCount(s)) {
			t.Fatalf("capChars(s, %d) kept %d characters", n, c)
		}
	}
}

func TestTrimPartialRune(t *testing.T) {
	tests := []struct{ in, want string }{
		{"abc", "abc"},
		{"ab\xc3", "ab"},              // first byte of é
		{"ab\xe4\xb8", "ab"},          // two of three bytes of 中
		{"ab\xf0\x9f\x98", "ab"},      // three of four bytes of 😀
		{"ab\xf0\x9f\x98\x80", "ab😀"}, // whole
		{"ab\xff", "ab\xff"},          // invalid, not partial: kept (decoded as U+FFFD)
		{"", ""},
	}
	for _, tt := range tests {
		if got := string(trimPartialRune([]byte(tt.in))); got != tt.want {
			t.Errorf("trimPartialRune(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
