// Package gateway is dsh serve: an MCP server (the go-sdk's) whose native
// tools - exec, read_file, write_file, edit_file, list_dir, web_fetch,
// web_search and status - run in one execution world per MCP session.
//
// A session's world is opened on the first tool call that needs it and
// closed with the session, after an idle timeout, and when the gateway
// closes; nothing of it is left behind. Every tool reaches the machine
// only through that world's FS, Exec and Net (package execworld), so the
// world's confinement - not a check in this package - is what holds.
// Each tool call writes one JSON audit line.
package gateway
