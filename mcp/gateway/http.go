package gateway

import (
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// StatelessRevision is the first MCP revision without sessions: each
// request stands alone.
const StatelessRevision = "2026-07-28"

// HTTPHandler serves the gateway over Streamable HTTP, both kinds of MCP
// revision: requests of 2026-07-28 and later (MCP-Protocol-Version, no
// session) by the go-sdk's stateless handler, each request a session and
// a world of its own; the rest (initialize, then requests with
// Mcp-Session-Id) by the stateful one, whose sessions end after idle
// without a request. Bodies beyond maxBody bytes are refused (413). It
// checks no token and no Origin: the caller wraps it.
func HTTPHandler(g *Gateway, idle time.Duration, maxBody int64) http.Handler {
	get := func(*http.Request) *mcp.Server { return g.Server() }
	stateful := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
		SessionTimeout:      idle,
		MaxRequestBodyBytes: maxBody,
	})
	stateless := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
		Stateless:                    true,
		MaxRequestBodyBytes:          maxBody,
		PropagateRequestCancellation: true,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Session-Id") == "" && r.Header.Get("Mcp-Protocol-Version") >= StatelessRevision {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
}
