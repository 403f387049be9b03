// Package bridge brings third-party MCP servers into dsh: each upstream
// server runs in its own execution world (stdio) or is reached through a
// world's Net (Streamable HTTP), and its tools appear under stable public
// names, mcp__<server>__<tool>.
//
// A Bridge supervises one connection per server with the official go-sdk
// client. Its catalog moves in generations: a sync fetches every page of
// tools/list and only a complete, conflict-free list replaces the last
// good one. notifications/tools/list_changed triggers a sync; a lost
// connection triggers the reconnect supervisor, whose budget is bounded
// per outage; a budget spent unregisters the server's tools and records
// why. Calls send the raw tool name on the wire, with a per-call timeout
// and cancellation propagated as notifications/cancelled.
package bridge
