package lsp

import (
	"strings"
	"unicode/utf8"
)

// lines splits text at LSP line ends: \n, \r\n and \r.
func lines(text string) []string {
	var out []string
	for {
		i := strings.IndexAny(text, "\r\n")
		if i < 0 {
			return append(out, text)
		}
		out = append(out, text[:i])
		if text[i] == '\r' && i+1 < len(text) && text[i+1] == '\n' {
			i++
		}
		text = text[i+1:]
	}
}

// utf16Col converts a 0-based column in code points on line to UTF-16
// code units, and reports whether the column is on the line (its end
// included).
func utf16Col(line string, points int) (int, bool) {
	units := 0
	for i := 0; i < points; i++ {
		if line == "" {
			return 0, false
		}
		r, n := utf8.DecodeRuneInString(line)
		line = line[n:]
		if r >= 0x10000 {
			units += 2
		} else {
			units++
		}
	}
	return units, true
}

// pointCol converts a 0-based UTF-16 column on line to code points. A
// column inside a surrogate pair counts the whole character; one past the
// end is the end.
func pointCol(line string, units int) int {
	points := 0
	for units > 0 && line != "" {
		r, n := utf8.DecodeRuneInString(line)
		line = line[n:]
		if r >= 0x10000 {
			units -= 2
		} else {
			units--
		}
		points++
	}
	return points
}
