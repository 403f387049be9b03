package lsp

import (
	"encoding/json"
	"net/url"
	"path/filepath"
	"strings"
)

// The few LSP types dsh speaks. Numbers are decoded as json.Number so
// that a negative or fractional position is caught, not rounded.

type position struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

type textDocumentPositionParams struct {
	TextDocument textDocumentIdentifier `json:"textDocument"`
	Position     position               `json:"position"`
}

type textDocumentIdentifier struct {
	URI string `json:"uri"`
}

type referenceParams struct {
	textDocumentPositionParams
	Context struct {
		IncludeDeclaration bool `json:"includeDeclaration"`
	} `json:"context"`
}

type didOpenParams struct {
	TextDocument struct {
		URI        string `json:"uri"`
		LanguageID string `json:"languageId"`
		Version    int    `json:"version"`
		Text       string `json:"text"`
	} `json:"textDocument"`
}

type didCloseParams struct {
	TextDocument textDocumentIdentifier `json:"textDocument"`
}

// initializeResult is what dsh reads of the server's answer.
type initializeResult struct {
	Capabilities struct {
		PositionEncoding       string          `json:"positionEncoding"`
		TextDocumentSync       json.RawMessage `json:"textDocumentSync"`
		DefinitionProvider     json.RawMessage `json:"definitionProvider"`
		ReferencesProvider     json.RawMessage `json:"referencesProvider"`
		ImplementationProvider json.RawMessage `json:"implementationProvider"`
		HoverProvider          json.RawMessage `json:"hoverProvider"`
	} `json:"capabilities"`
}

// provides reports whether a capability value advertises the feature:
// true or an options object.
func provides(v json.RawMessage) bool {
	s := strings.TrimSpace(string(v))
	return s != "" && s != "false" && s != "null"
}

// syncOpenClose reports whether textDocumentSync lets dsh open and close
// documents: a TextDocumentSyncKind other than None (a server that syncs
// at all takes didOpen/didClose), or options with openClose true.
func syncOpenClose(v json.RawMessage) bool {
	s := strings.TrimSpace(string(v))
	if s == "" || s == "null" {
		return false
	}
	if s[0] != '{' {
		var kind int
		return json.Unmarshal(v, &kind) == nil && kind > 0
	}
	var opts struct {
		OpenClose bool `json:"openClose"`
	}
	return json.Unmarshal(v, &opts) == nil && opts.OpenClose
}

// fileURI is the file: URI of an absolute world path.
func fileURI(path string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()
}

// uriPath is the absolute world path of a file: URI, or "" when the URI
// is not one.
func uriPath(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") || !strings.HasPrefix(u.Path, "/") {
		return ""
	}
	return filepath.Clean(u.Path)
}
