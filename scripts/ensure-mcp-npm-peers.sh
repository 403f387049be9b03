#!/bin/sh
# ensure-mcp-npm-peers.sh installs the npm MCP programs the end-to-end
# tests talk to (the MCP Inspector, whose CLI lists and calls dsh serve's
# tools) into .cache/peers/mcp-npm, outside /tmp. It runs outside any
# world, before the tests (the registries are blocked inside, correctly).
# Idempotent: a complete install is kept.
set -eu
cd "$(dirname "$0")/.."
dir="${DSH_PEERS_DIR:-.cache/peers}/mcp-npm"
pkgs="@modelcontextprotocol/inspector@0.15.0"
stamp="$dir/.installed"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$pkgs" ]; then
	exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null
	else
		echo "ensure-mcp-npm-peers: npm is missing; install nodejs and npm" >&2
		exit 1
	fi
fi
mkdir -p "$dir"
# shellcheck disable=SC2086
npm install --silent --no-audit --no-fund --prefix "$dir" $pkgs
echo "$pkgs" >"$stamp"
