// Package gateway is dsh serve: an MCP server (the go-sdk's) whose native
// tools - exec, read_file, write_file, edit_file, list_dir, web_fetch,
// web_search, lsp and status - run in one execution world per MCP session,
// beside the tools, prompts and resources of an MCP bridge (package
// mcp/bridge), whose servers each run in a world of their own.
//
// A session's world is opened on the first tool call that needs it and
// closed with the session, after an idle timeout, and when the gateway
// closes; nothing of it is left behind. Every tool reaches the machine
// only through that world's FS, Exec and Net (package execworld), so the
// world's confinement - not a check in this package - is what holds. The
// lsp tool's language servers run inside the session's world too (one
// LSP client per world, closed before it).
//
// The bridged tools are served under their public names (mcp__server__tool)
// from the bridge the caller started, so the first tools/list has them;
// the gateway follows the bridge's changes, and the go-sdk server sends
// notifications/tools/list_changed (and the prompt and resource ones) to
// connected clients. Each tool call writes one JSON audit line.
package gateway
