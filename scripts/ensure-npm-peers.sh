#!/bin/sh
# ensure-npm-peers.sh installs the npm MCP servers the end-to-end tests run
# (real peers no one here wrote) into .cache/peers, outside /tmp, so that
# a world sees them: /tmp is private inside every world. It runs outside
# any world, before the tests (registries are blocked inside, correctly).
# Idempotent: a complete install is kept. With Docker and dsh/base there,
# it also builds dsh/node: node, these and the npm language servers
# (make peers installs them first, in .cache/peers/lsp-npm) for docker worlds.
set -eu
cd "$(dirname "$0")/.."
peers=.cache/peers
dir=$peers/mcp-servers
pkgs="@modelcontextprotocol/server-everything@2026.8.31 @modelcontextprotocol/server-filesystem@2026.8.31"
stamp="$dir/.installed"
# shellcheck disable=SC2086
scripts/npm-peers.sh mcp-servers $pkgs

# The image of the docker driver's worlds, when a Docker engine and
# dsh/base (make images) are there; rebuilt when the packages or the
# Dockerfile change. The build sees only the two package trees.
image=dsh/node:latest
if command -v docker >/dev/null 2>&1 && docker image inspect dsh/base:latest >/dev/null 2>&1; then
	[ -f "$peers/lsp-npm/.installed" ] || { echo "ensure-npm-peers: the npm language servers are not installed; run make peers" >&2; exit 1; }
	printf '*\n!mcp-servers/node_modules\n!lsp-npm/node_modules\n' >"$peers/.dockerignore"
	want="$( (cat images/node/Dockerfile; cat "$stamp" "$peers/lsp-npm/.installed") | sha256sum | cut -d' ' -f1)"
	got="$(docker image inspect -f '{{index .Config.Labels "dev.dsh.peers"}}' "$image" 2>/dev/null || true)"
	if [ "$got" != "$want" ]; then
		# The legacy builder prints a banner on every run: shown on failure only.
		if ! out="$(docker build -q --label "dev.dsh.peers=$want" -t "$image" -f images/node/Dockerfile "$peers" 2>&1)"; then
			echo "$out" >&2
			exit 1
		fi
	fi
fi
