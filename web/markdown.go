package web

import (
	"strings"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// MaxHTMLDepth is the deepest element nesting converted to Markdown. The
// converter recurses per level, so a hostile page of a million nested
// <div>s would cost stack and time; past this depth the HTML is returned
// as it came, as the reference does.
const MaxHTMLDepth = 512

// ToMarkdown converts an HTML document to Markdown, dropping script,
// style and noscript elements. pageURL, if set, makes relative links and
// images absolute. A document nested deeper than MaxHTMLDepth, or one the
// converter rejects, is returned unchanged.
func ToMarkdown(doc, pageURL string) string {
	root, err := html.Parse(strings.NewReader(doc))
	if err != nil {
		return doc
	}
	if !pruneAndCheckDepth(root, MaxHTMLDepth) {
		return doc
	}
	conv := converter.NewConverter(converter.WithPlugins(
		base.NewBasePlugin(),
		commonmark.NewCommonmarkPlugin(),
		table.NewTablePlugin(),
	))
	var opts []converter.ConvertOptionFunc
	if pageURL != "" {
		opts = append(opts, converter.WithDomain(pageURL))
	}
	out, err := conv.ConvertNode(root, opts...)
	if err != nil {
		return doc
	}
	return string(out)
}

// pruneAndCheckDepth removes script, style and noscript elements from the
// tree and reports whether no node is nested deeper than maxDepth. It
// walks with an explicit stack: recursion is what the guard protects from.
func pruneAndCheckDepth(root *html.Node, maxDepth int) bool {
	type frame struct {
		n     *html.Node
		depth int
	}
	stack := []frame{{root, 0}}
	for len(stack) > 0 {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if f.depth > maxDepth {
			return false
		}
		for c := f.n.FirstChild; c != nil; {
			next := c.NextSibling
			if c.Type == html.ElementNode && dropped(c.DataAtom) {
				f.n.RemoveChild(c)
			} else {
				stack = append(stack, frame{c, f.depth + 1})
			}
			c = next
		}
	}
	return true
}

func dropped(a atom.Atom) bool {
	return a == atom.Script || a == atom.Style || a == atom.Noscript
}
