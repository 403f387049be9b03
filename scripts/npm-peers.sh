#!/bin/sh
# npm-peers.sh NAME PACKAGE... installs npm packages the end-to-end tests
# run (language servers, MCP servers and clients) into
# .cache/peers/NAME, outside /tmp, so that a native world sees them (/tmp
# is private inside every world; node is the host's). It runs outside any
# world, before the tests (the registries are blocked inside, correctly);
# make peers calls it. Idempotent: a complete install of the same
# packages is kept.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 NAME PACKAGE..." >&2; exit 2; }
cd "$(dirname "$0")/.."
name=$1
shift
dir="${DSH_PEERS_DIR:-.cache/peers}/$name"
stamp="$dir/.installed"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$*" ]; then
	exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null
	else
		echo "npm-peers: npm is missing; install nodejs and npm" >&2
		exit 1
	fi
fi
mkdir -p "$dir"
npm install --silent --no-audit --no-fund --prefix "$dir" "$@"
echo "$*" >"$stamp"
