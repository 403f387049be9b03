package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/lsp"
)

// LSPClient asks the language servers of one world; *lsp.Client is one.
type LSPClient interface {
	Query(ctx context.Context, q lsp.Query) (*lsp.Result, error)
	Status(ctx context.Context) []lsp.ServerStatus
	Close() error
}

// LSPFactory makes the LSP client of a session's world. It must start
// nothing: the servers start in the world on their first query.
type LSPFactory func(w *execworld.World) (LSPClient, error)

// DefaultLSPTimeout is the lsp tool's budget: world, server start and
// answer.
const DefaultLSPTimeout = 60 * time.Second

// LSPInput is the lsp tool's input.
type LSPInput struct {
	Operation string `json:"operation" jsonschema:"definition, references (the declaration included), implementation or hover"`
	File      string `json:"file" jsonschema:"the file, relative to the workspace (or absolute inside it)"`
	Line      int    `json:"line" jsonschema:"1-based line"`
	Column    int    `json:"column" jsonschema:"1-based column in characters (code points), as editors show them"`
}

// LSPLocation is one location of an lsp result: 1-based, columns in
// code points, the path relative to the workspace.
type LSPLocation struct {
	Path      string `json:"path" jsonschema:"relative to the workspace; absolute for a file outside it"`
	Line      int    `json:"line"`
	Column    int    `json:"column"`
	EndLine   int    `json:"end_line"`
	EndColumn int    `json:"end_column"`
}

// LSPOutput is the lsp tool's result: dsh lsp --json's shape.
type LSPOutput struct {
	Kind      string        `json:"kind" jsonschema:"locations or hover"`
	Server    string        `json:"server" jsonschema:"the language server that answered"`
	Locations []LSPLocation `json:"locations,omitempty" jsonschema:"for definition, references and implementation: at most 100"`
	Omitted   int           `json:"omitted,omitempty" jsonschema:"locations left out past the cap"`
	Contents  *string       `json:"contents,omitempty" jsonschema:"for hover: the hover text (signature, documentation), empty when there is none"`
}

func (g *Gateway) addLSP() {
	if g.opts.LSP == nil {
		return
	}
	in, err := jsonschema.For[LSPInput](nil)
	if err != nil {
		panic(err)
	}
	in.Properties["operation"].Enum = []any{"definition", "references", "implementation", "hover"}
	one := 1.0
	in.Properties["line"].Minimum = &one
	in.Properties["column"].Minimum = &one
	addTool(g, &mcp.Tool{
		Name:  "lsp",
		Title: "Ask a language server about a symbol",
		Description: "Ask the language server of a file (gopls, typescript-language-server, pyright, clangd, rust-analyzer; running confined in this world) " +
			"where the symbol at line:column is defined, referenced or implemented, or for its hover text. Line and column are 1-based, the column in characters. " +
			"LSP_INDEXING means try again shortly.",
		InputSchema: in,
		Annotations: &mcp.ToolAnnotations{Title: "lsp", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)},
	}, g.lspQuery)
}

func (g *Gateway) lspQuery(ctx context.Context, c *call, in LSPInput) (string, LSPOutput, error) {
	var out LSPOutput
	op, err := lsp.ParseOperation(in.Operation)
	if err != nil {
		return "", out, badArg("operation", "%q is not one of definition, references, implementation, hover", in.Operation)
	}
	if in.File == "" {
		return "", out, badArg("file", "give the file, relative to the workspace")
	}
	if in.Line < 1 || in.Column < 1 {
		return "", out, badArg("line", "line %d, column %d: both are 1-based, so at least 1", in.Line, in.Column)
	}
	ctx, cancel := context.WithTimeoutCause(ctx, g.opts.LSPTimeout, fmt.Errorf("no answer within the lsp budget of %v", g.opts.LSPTimeout))
	defer cancel()
	w, err := c.world(ctx)
	if err != nil {
		return "", out, err
	}
	client, err := c.s.lspClient(w)
	if err != nil {
		return "", out, err
	}
	res, err := client.Query(ctx, lsp.Query{Op: op, File: in.File, Line: in.Line, Column: in.Column})
	if err != nil {
		return "", out, lspError(err)
	}
	out.Kind, out.Server = string(res.Kind), res.Server
	if res.Kind == lsp.KindHover {
		h := cutRunes(res.Hover, lsp.DefaultMaxResultChars)
		out.Contents = &h
	} else {
		shown := res.Locations
		if len(shown) > lsp.DefaultMaxLocations {
			shown = shown[:lsp.DefaultMaxLocations]
			out.Omitted = len(res.Locations) - len(shown)
		}
		out.Locations = []LSPLocation{}
		for _, l := range shown {
			out.Locations = append(out.Locations, LSPLocation{l.DisplayPath(), l.Line, l.Column, l.EndLine, l.EndColumn})
		}
	}
	return lsp.Render(res, nil), out, nil
}

// lspError puts an lsp error's code first, where an agent looks for it.
func lspError(err error) error {
	var le *lsp.Error
	if errors.As(err, &le) {
		return fmt.Errorf("%s: %s", le.Code, le.Msg)
	}
	return err
}

// cutRunes cuts s to at most n code points.
func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for range n {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i]
}

// lspClient returns the LSP client of world w, made on first use; it
// goes with the world.
func (s *session) lspClient(w *execworld.World) (LSPClient, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.world != w || s.closed {
		return nil, errors.New("this session's world was closed during the call; call again to open a new one")
	}
	if s.lsp != nil {
		return s.lsp, nil
	}
	c, err := s.g.opts.LSP(w)
	if err != nil {
		return nil, fmt.Errorf("the language servers of world %s: %w", w.ID, err)
	}
	s.lsp = c
	return c, nil
}

// currentLSP is the LSP client of the open world, or nil; it opens and
// makes nothing.
func (s *session) currentLSP() (*execworld.World, LSPClient) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.world, s.lsp
}
