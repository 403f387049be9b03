package web

import (
	"strings"
	"testing"
)

func TestToMarkdownDropsScriptStyleNoscript(t *testing.T) {
	doc := `<html><head><title>T</title><style>.x{color:red}</style></head><body>
<h1>Title</h1>
<script>alert("SCRIPT-TEXT")</script>
<noscript>NOSCRIPT-TEXT</noscript>
<p>Hello <b>world</b>. <a href="/about">About</a></p>
<div><style>STYLE-IN-BODY</style><span>kept</span></div>
</body></html>`
	got := ToMarkdown(doc, "https://example.com/dir/page")
	for _, gone := range []string{"SCRIPT-TEXT", "NOSCRIPT-TEXT", "STYLE-IN-BODY", "color:red"} {
		if strings.Contains(got, gone) {
			t.Errorf("ToMarkdown kept %q:\n%s", gone, got)
		}
	}
	for _, want := range []string{"# Title", "Hello **world**.", "[About](https://example.com/about)", "kept"} {
		if !strings.Contains(got, want) {
			t.Errorf("ToMarkdown lacks %q:\n%s", want, got)
		}
	}
}

func TestToMarkdownDepthGuard(t *testing.T) {
	nested := func(depth int) string {
		return "<html><body>" + strings.Repeat("<div>", depth) + "deep" + strings.Repeat("</div>", depth) + "</body></html>"
	}
	shallow := nested(100)
	if got := ToMarkdown(shallow, ""); strings.Contains(got, "<div>") || !strings.Contains(got, "deep") {
		t.Errorf("ToMarkdown(100 nested divs) = %q, want converted text", got)
	}
	deep := nested(MaxHTMLDepth + 10)
	if got := ToMarkdown(deep, ""); got != deep {
		t.Errorf("ToMarkdown(%d nested divs) converted the document; want it returned as it came", MaxHTMLDepth+10)
	}
	// A hostile depth is rejected quickly and without recursion.
	huge := nested(200_000)
	if got := ToMarkdown(huge, ""); got != huge {
		t.Errorf("ToMarkdown(200000 nested divs) converted the document; want it returned as it came")
	}
}

func TestPruneAndCheckDepth(t *testing.T) {
	// The walker's own guard, independent of the parser's limit.
	root := &htmlNodeChain{}
	n := root.build(20)
	if !pruneAndCheckDepth(n, 20) {
		t.Errorf("pruneAndCheckDepth(depth 20, max 20) = false, want true")
	}
	if pruneAndCheckDepth(n, 19) {
		t.Errorf("pruneAndCheckDepth(depth 20, max 19) = true, want false")
	}
}

func TestFormat(t *testing.T) {
	r := &Result{URL: "https://example.com/", StatusCode: 404, Kind: KindText, Content: "not here"}
	if got, want := Format(r), "Fetched https://example.com/ (HTTP 404)\n\nnot here"; got != want {
		t.Errorf("Format = %q, want %q", got, want)
	}
	r.Truncated = true
	if got := Format(r); !strings.HasSuffix(got, truncationFooter) {
		t.Errorf("Format(truncated) = %q, want the truncation footer", got)
	}
}

func TestFormatTotalCap(t *testing.T) {
	r := &Result{URL: "https://example.com/", StatusCode: 200, Kind: KindText}
	head := "Fetched https://example.com/ (HTTP 200)\n\n"
	// Exactly at the cap: whole, no footer.
	body := strings.Repeat("é", MaxOutputChars-charCount(head))
	if got := format(r, body, MaxOutputChars); got != head+body {
		t.Errorf("format at the cap cut or added a footer (len %d chars)", charCount(got))
	}
	// One over: cut, footer added, total within the cap, no split character.
	body += "😀"
	got := format(r, body, MaxOutputChars)
	if !strings.HasSuffix(got, truncationFooter) {
		t.Errorf("format over the cap has no footer")
	}
	if n := charCount(got); n > MaxOutputChars {
		t.Errorf("format over the cap returned %d characters, want <= %d", n, MaxOutputChars)
	}
	if strings.ContainsRune(got, '\uFFFD') {
		t.Errorf("format over the cap split a character")
	}
}

func TestBodyConvertsOnlyHTML(t *testing.T) {
	if got := Body(&Result{Kind: KindText, Content: "<b>x</b>"}); got != "<b>x</b>" {
		t.Errorf("Body(text) = %q, want it unchanged", got)
	}
	if got := Body(&Result{Kind: KindHTML, Content: "<b>x</b>"}); got != "**x**" {
		t.Errorf("Body(html) = %q, want %q", got, "**x**")
	}
}

func TestFormatSearch(t *testing.T) {
	r := &SearchResult{Provider: "p", Queries: []string{"a", "b"}, Sources: []Source{
		{Title: "T1", URL: "https://1.example/", Snippet: "s1"},
		{Title: "T2", URL: "https://2.example/"},
	}}
	want := "Results from p for: a; b\n\n1. T1\n   https://1.example/\n   s1\n\n2. T2\n   https://2.example/\n"
	if got := FormatSearch(r); got != want {
		t.Errorf("FormatSearch = %q, want %q", got, want)
	}
	if got := FormatSearch(&SearchResult{Provider: "p", Queries: []string{"a"}}); !strings.HasSuffix(got, "No results.\n") {
		t.Errorf("FormatSearch(no sources) = %q", got)
	}
}
