package lsp

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Rendering caps of the lsp tool.
const (
	DefaultMaxLocations   = 100
	DefaultMaxResultChars = 16_000
)

// RenderOptions bound Render. The zero value uses the defaults.
type RenderOptions struct {
	// MaxLocations is how many locations are listed. If zero, 100.
	MaxLocations int
	// MaxResultChars caps the text in characters. If zero, 16,000.
	MaxResultChars int
}

// Render is the tool's text of a result: locations as path:line:column,
// grouped by file (files in the order the server named them), relative
// to the workspace; a note when locations were left out; "No results."
// or "No hover information." when there is nothing. The text is cut at a
// character boundary, never inside one.
func Render(r *Result, opts *RenderOptions) string {
	var o RenderOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxLocations <= 0 {
		o.MaxLocations = DefaultMaxLocations
	}
	if o.MaxResultChars <= 0 {
		o.MaxResultChars = DefaultMaxResultChars
	}
	var text string
	switch {
	case r.Kind == KindHover && !r.HasHover:
		text = "No hover information."
	case r.Kind == KindHover:
		text = r.Hover
	case len(r.Locations) == 0:
		text = "No results."
	default:
		shown := r.Locations
		if len(shown) > o.MaxLocations {
			shown = shown[:o.MaxLocations]
		}
		var order []string
		byFile := map[string][]Location{}
		for _, l := range shown {
			p := l.DisplayPath()
			if _, ok := byFile[p]; !ok {
				order = append(order, p)
			}
			byFile[p] = append(byFile[p], l)
		}
		var b strings.Builder
		for _, p := range order {
			for _, l := range byFile[p] {
				fmt.Fprintf(&b, "%s:%d:%d\n", p, l.Line, l.Column)
			}
		}
		if n := len(r.Locations) - len(shown); n > 0 {
			fmt.Fprintf(&b, "… %d more location(s) omitted (limit %d).\n", n, o.MaxLocations)
		}
		text = strings.TrimSuffix(b.String(), "\n")
	}
	return cutChars(text, o.MaxResultChars)
}

// DisplayPath is the path a user is shown: relative to the workspace
// when the file is inside it, else absolute.
func (l Location) DisplayPath() string {
	if l.Rel != "" {
		return l.Rel
	}
	return l.Path
}

// cutChars cuts s to at most n characters (code points), marking the cut.
func cutChars(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	const mark = "\n… (truncated)"
	keep := max(0, n-utf8.RuneCountInString(mark))
	i := 0
	for range keep {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i] + mark
}
