#!/bin/sh
# ensure-npm-peers.sh installs the npm MCP servers the end-to-end tests run
# (real peers no one here wrote) into .cache/peers, outside /tmp, so that
# a world sees them: /tmp is private inside every world. It runs outside
# any world, before the tests (registries are blocked inside, correctly).
# Idempotent: a complete install is kept.
set -eu
cd "$(dirname "$0")/.."
dir=.cache/peers
pkgs="@modelcontextprotocol/server-everything@2026.8.31 @modelcontextprotocol/server-filesystem@2026.8.31"
stamp="$dir/.installed"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$pkgs" ]; then
	exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null
	else
		echo "ensure-npm-peers: npm is missing; install nodejs and npm" >&2
		exit 1
	fi
fi
mkdir -p "$dir"
# shellcheck disable=SC2086
npm install --silent --no-audit --no-fund --prefix "$dir" $pkgs
echo "$pkgs" >"$stamp"
