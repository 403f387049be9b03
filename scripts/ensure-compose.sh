#!/usr/bin/env bash
# Makes sure both compose implementations the deploy/compose files are
# tested with are installed (make e2e-compose calls this):
#   docker-compose 1.29  Debian's package (apt-get install docker-compose)
#   docker compose v2    built from its Go module (the module proxy is the
#                        only place it can come from here), installed as
#                        the docker CLI plugin
# Each is skipped when present; the v2 build takes a few minutes once.
set -euo pipefail

say() { printf 'ensure-compose: %s\n' "$*" >&2; }

compose_v2_version="${DSH_COMPOSE_V2_VERSION:-v2.40.3}"
plugin_dir="${DSH_COMPOSE_PLUGIN_DIR:-/usr/local/lib/docker/cli-plugins}"

# deploy/compose/README.md's commands also use openssl (the token).
apt_packages=()
command -v docker-compose >/dev/null 2>&1 || apt_packages+=(docker-compose)
command -v openssl >/dev/null 2>&1 || apt_packages+=(openssl)
if ((${#apt_packages[@]})); then
	if [ "$(id -u)" != 0 ]; then
		say "missing ${apt_packages[*]}; install them (as root: apt-get install ${apt_packages[*]}) and run again"
		exit 1
	fi
	say "installing ${apt_packages[*]} with apt (one-time set-up)"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${apt_packages[@]}" >/dev/null
fi

if ! docker compose version >/dev/null 2>&1; then
	command -v go >/dev/null 2>&1 || { say "go is missing; docker compose $compose_v2_version is built with it"; exit 1; }
	say "building docker compose $compose_v2_version from its Go module (one-time set-up, a few minutes)"
	mkdir -p "$plugin_dir"
	gobin="$(mktemp -d /tmp/dsh-compose.XXXXXX)"
	# shellcheck disable=SC2064
	trap "rm -rf '$gobin'" EXIT
	# go install pkg@version refuses a module whose go.mod has exclude
	# directives (compose's has), so build it as the main module from the
	# module cache's copy of its source.
	src="$(cd / && GOFLAGS= go mod download -json "github.com/docker/compose/v2@$compose_v2_version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
	[ -d "$src" ] || { say "go mod download github.com/docker/compose/v2@$compose_v2_version gave no source directory"; exit 1; }
	(cd "$src" && CGO_ENABLED=0 GOFLAGS=-mod=readonly go build -trimpath \
		-ldflags "-s -w -X github.com/docker/compose/v2/internal.Version=$compose_v2_version" -o "$gobin/cmd" ./cmd)
	install -m 0755 "$gobin/cmd" "$plugin_dir/docker-compose"
	rm -rf "$gobin"
	trap - EXIT
	docker compose version >/dev/null 2>&1 || { say "docker compose does not answer after the build (plugin at $plugin_dir/docker-compose)"; exit 1; }
fi
say "$(docker-compose version --short 2>/dev/null | sed 's/^/docker-compose /'), $(docker compose version --short 2>/dev/null | sed 's/^/docker compose /')"
