// Package mcptest holds what the tests that drive an MCP server with the
// go-sdk client share: calling a tool within a bound, and its text.
package mcptest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Call calls tool with args within timeout, failing the test on a
// protocol error (a tool error is in the result's IsError).
func Call(t testing.TB, cs *mcp.ClientSession, timeout time.Duration, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", tool, err)
	}
	return res
}

// Text is the text content of a result, concatenated.
func Text(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
