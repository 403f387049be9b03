package web

import "golang.org/x/net/html"

// htmlNodeChain builds a tree of nested elements directly, bypassing the
// parser and its own depth limit.
type htmlNodeChain struct{}

func (htmlNodeChain) build(depth int) *html.Node {
	root := &html.Node{Type: html.DocumentNode}
	cur := root
	for range depth {
		c := &html.Node{Type: html.ElementNode, Data: "div"}
		cur.AppendChild(c)
		cur = c
	}
	return root
}
