// Package e2e holds the end-to-end tests of package lsp against real
// language servers (gopls) in real worlds (native, docker). It has no
// code of its own; the servers are installed by scripts/ensure-gopls.sh
// before the tests, never by them.
package e2e
