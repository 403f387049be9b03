// Package lsp is dsh's language-server surface: one closed set of four
// read-only questions — Definition, References (with the declaration),
// Implementation and Hover — asked of language servers that run inside
// an execution world.
//
// A Client routes a file by its final lowercased extension to exactly
// one configured server (extensions are exclusive; a configuration with
// a conflict publishes nothing). It starts one server per (server id,
// canonical workspace) lazily, inside the world through Exec.Start, and
// speaks JSON-RPC to it over the process's stdio with a hand-written
// client: Content-Length framing with header and body limits, one writer
// lock, a pending-call map whose cancellation sends $/cancelRequest, and
// static answers to the server's own requests (workspace/configuration,
// window/workDoneProgress/create, client/registerCapability).
//
// Every query runs in its workspace's queue: the source is read through
// the world's FS, the 1-based code-point column is converted to UTF-16
// from the file's own text, and the file is opened, asked about and
// closed (didOpen → request → didClose). URIs are mapped with the
// world's path mapping both ways; result columns are converted back to
// code points from the target file's text.
//
// A server is ready once initialize is answered and initialized sent,
// plus an optional readiness gate with a cap (progress tokens, a log
// line, rust-analyzer's quiescence): past the cap the query returns an
// LSP_INDEXING error ("try again") instead of hanging. A transport
// failure (the server exited, a framing error) is retried once on a
// fresh process; a server's error response never is, but ContentModified
// is. A server that keeps failing is backed off and then reported as
// failed with the tail of its stderr.
package lsp
