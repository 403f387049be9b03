#!/bin/sh
# ensure-lsp-npm-peers.sh installs the npm language servers the LSP
# end-to-end tests run (typescript-language-server with typescript, and
# pyright) into .cache/peers/lsp-npm, outside /tmp, so that a native world
# sees them (/tmp is private inside every world; node is the host's). It
# runs outside any world, before the tests (the registries are blocked
# inside, correctly). Idempotent: a complete install is kept.
set -eu
cd "$(dirname "$0")/.."
dir="${DSH_PEERS_DIR:-.cache/peers}/lsp-npm"
pkgs="typescript-language-server@6.0.2 typescript@5.9.3 pyright@1.1.414"
stamp="$dir/.installed"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$pkgs" ]; then
	exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null
	else
		echo "ensure-lsp-npm-peers: npm is missing; install nodejs and npm" >&2
		exit 1
	fi
fi
mkdir -p "$dir"
# shellcheck disable=SC2086
npm install --silent --no-audit --no-fund --prefix "$dir" $pkgs
echo "$pkgs" >"$stamp"
