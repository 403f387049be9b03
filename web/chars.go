package web

import "unicode/utf8"

// capChars cuts s to at most n characters (Unicode code points), never
// inside one, and reports whether it cut. s must be valid UTF-8 (decoded
// bodies are); an invalid byte counts as one character.
//
// The reference counted UTF-16 code units and could cut a surrogate pair
// in half; counting code points on rune boundaries cannot.
func capChars(s string, n int) (string, bool) {
	if n < 0 {
		n = 0
	}
	if len(s) <= n { // fewer bytes than n means fewer characters too
		return s, false
	}
	count := 0
	for i := range s { // i steps over whole runes
		if count == n {
			return s[:i], true
		}
		count++
	}
	return s, false
}

func truncateChars(s string, n int) string {
	out, _ := capChars(s, n)
	return out
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of b, left
// there when a byte cap cut a character.
func trimPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			return b
		}
	}
	return b
}
