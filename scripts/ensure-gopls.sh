#!/usr/bin/env bash
# Installs the language servers the LSP end-to-end tests use, outside any
# world (the registries are blocked inside, correctly), into a cache
# directory of the checkout: .cache/peers/bin (make test runs this). A
# second run with the binary present takes no time.
#
#   gopls  golang.org/x/tools/gopls@$GOPLS_VERSION, static (CGO_ENABLED=0),
#          built with the local toolchain (GOTOOLCHAIN=local).
#
# The tests find it through DSH_PEERS_DIR (default: .cache/peers of the
# checkout) and require it when DSH_REQUIRE_TOOLS=1.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
peers="${DSH_PEERS_DIR:-$here/.cache/peers}"
version="${GOPLS_VERSION:-v0.23.0}"
bin="$peers/bin/gopls"

say() { printf 'ensure-gopls: %s\n' "$*" >&2; }

if [ -x "$bin" ] && [ "$(cat "$peers/gopls.version" 2>/dev/null)" = "$version" ]; then
	exit 0
fi
command -v go >/dev/null 2>&1 || { say "go is not installed; install Go 1.26 and run again"; exit 1; }
mkdir -p "$peers/bin"
say "building golang.org/x/tools/gopls@$version (static, one-time set-up)"
if ! CGO_ENABLED=0 GOTOOLCHAIN=local GOBIN="$peers/bin" GOFLAGS=-trimpath \
	go install "golang.org/x/tools/gopls@$version"; then
	say "go install golang.org/x/tools/gopls@$version failed (output above); check that the Go module proxy answers (go env GOPROXY)"
	exit 1
fi
printf '%s\n' "$version" >"$peers/gopls.version"
say "installed $bin"
