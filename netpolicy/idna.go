package netpolicy

import (
	"slices"
	"strings"
	"unicode/utf8"
)

//go:generate go run gen_idna.go

// idnaMap applies IDNA lookup mapping to the runes it turns into ASCII
// (idnaTable), so "１２７。０。０。１" is judged as 127.0.0.1 exactly as
// net/http would dial it. Any rune left non-ASCII makes the host invalid;
// see parseHost for why.
func idnaMap(in, h string) (string, error) {
	var b strings.Builder
	b.Grow(len(h))
	for i := 0; i < len(h); {
		c := h[i]
		if c < utf8.RuneSelf {
			b.WriteByte(c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(h[i:])
		if r == utf8.RuneError && size == 1 {
			return "", invalidf(in, "host is not valid UTF-8")
		}
		m, ok := idnaASCII(r)
		if !ok {
			return "", invalidf(in, "non-ASCII host; give internationalised names in their xn-- (Punycode) form")
		}
		b.WriteString(m)
		i += size
	}
	return b.String(), nil
}

// idnaEntry is one row of idnaTable.
type idnaEntry struct {
	r rune
	m string
}

// idnaASCII returns the ASCII that IDNA lookup maps r to, if it does.
func idnaASCII(r rune) (string, bool) {
	i, ok := slices.BinarySearchFunc(idnaTable[:], r, func(e idnaEntry, r rune) int { return int(e.r - r) })
	if !ok {
		return "", false
	}
	return idnaTable[i].m, true
}
