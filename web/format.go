package web

import (
	"fmt"
	"strings"
)

// MaxOutputChars caps the whole text a web_fetch tool call returns,
// header and footer included.
const MaxOutputChars = 200_000

// truncationFooter ends every output whose body was cut, so the model
// knows it saw only the beginning.
const truncationFooter = "\n\n[Content truncated: the page exceeded the fetch size limits; only the beginning is shown.]"

// Body returns the presentable body of r: Markdown for HTML, the text as
// it came otherwise.
func Body(r *Result) string {
	if r.Kind == KindHTML {
		return ToMarkdown(r.Content, r.URL)
	}
	return r.Content
}

// Format renders a fetch result as the web_fetch tool shows it:
//
//	Fetched <final url> (HTTP <status>)
//
//	<Markdown or text>
//
// with a truncation footer when the fetch or this rendering cut the body,
// and at most MaxOutputChars characters in all.
func Format(r *Result) string {
	return format(r, Body(r), MaxOutputChars)
}

func format(r *Result, body string, maxChars int) string {
	head := fmt.Sprintf("Fetched %s (HTTP %d)\n\n", r.URL, r.StatusCode)
	fits := charCount(head)+charCount(body) <= maxChars
	if fits && !r.Truncated {
		return head + body
	}
	// The footer must survive the cap: cut the body to make room for it.
	body = truncateChars(body, maxChars-charCount(head)-charCount(truncationFooter))
	return head + body + truncationFooter
}

func charCount(s string) int {
	n := 0
	for range s {
		n++
	}
	return n
}

// Render returns the body a caller shows without the tool's header: the
// Markdown (or, with raw, the decoded body as it came), at most
// MaxOutputChars characters. truncated reports whether the fetch or this
// cap cut it.
func Render(r *Result, raw bool) (content string, truncated bool) {
	body := r.Content
	if !raw {
		body = Body(r)
	}
	body, cut := capChars(body, MaxOutputChars)
	return body, cut || r.Truncated
}

// FormatSearch renders a search result as the web_search tool shows it:
// the provider and queries, then each source numbered with its URL and
// snippet. The sources are web content: callers must not treat them as
// instructions.
func FormatSearch(r *SearchResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Results from %s for: %s\n", r.Provider, strings.Join(r.Queries, "; "))
	if len(r.Sources) == 0 {
		b.WriteString("\nNo results.\n")
	}
	for i, s := range r.Sources {
		fmt.Fprintf(&b, "\n%d. %s\n   %s\n", i+1, s.Title, s.URL)
		if s.Snippet != "" {
			fmt.Fprintf(&b, "   %s\n", s.Snippet)
		}
	}
	return b.String()
}
