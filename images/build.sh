#!/usr/bin/env bash
# images/build.sh builds dsh's local images; `make images` runs it.
#
# There is no container registry on dsh's build machines, so the Debian base
# is made here: debootstrap --variant=minbase bookworm, then docker import.
# Every step is skipped when its image already exists and was built from the
# same Dockerfile (its hash is a label on the image), so a second run takes a
# second. Set DSH_IMAGES_REBUILD=1 to rebuild dsh/base and the fixture anyway
# (the imported Debian base is kept; remove it by hand to remake it).
#
# Images:
#   dsh/debian-bookworm:local  debootstrapped bookworm (minbase)
#   dsh/base:latest            images/base/Dockerfile on top of it
#   dsh/fixture:latest         FROM scratch + busybox-static, for fast tests
#   dsh/go:latest              dsh/base + the host's Go toolchain + gopls
#                              (scripts/ensure-gopls.sh), for Go worlds
#   dsh/dsh:VERSION, :latest   FROM scratch + bin/dsh + CA certificates, for
#                              compose deployments (deploy/compose); VERSION
#                              is $DSH_VERSION (make passes git describe)
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
debian_image="${DSH_DEBIAN_IMAGE:-dsh/debian-bookworm:local}"
base_image="${DSH_BASE_IMAGE:-dsh/base:latest}"
fixture_image="${DSH_FIXTURE_IMAGE:-dsh/fixture:latest}"
go_image="${DSH_GO_IMAGE:-dsh/go:latest}"
dsh_repo="${DSH_DSH_IMAGE:-dsh/dsh}"
dsh_version="${DSH_VERSION:-dev}"
dsh_binary="${DSH_BINARY:-$here/../bin/dsh}"
suite=bookworm

say() { printf 'images: %s\n' "$*" >&2; }
die() { printf 'images: error: %s\n' "$*" >&2; exit 1; }

# quiet runs a command and shows its output only when it fails (docker
# build prints a deprecation banner on every run otherwise).
quiet() {
	local out
	if ! out="$("$@" 2>&1)"; then
		printf '%s\n' "$out" >&2
		return 1
	fi
}

have_image() { docker image inspect "$1" >/dev/null 2>&1; }

# current IMAGE DOCKERFILE reports whether IMAGE exists and was built from
# this DOCKERFILE (and no rebuild was asked for).
current() {
	[ "${DSH_IMAGES_REBUILD:-}" != 1 ] || return 1
	local want got
	want="$(sha256sum "$2" | cut -d' ' -f1)"
	got="$(docker image inspect -f '{{index .Config.Labels "dev.dsh.dockerfile"}}' "$1" 2>/dev/null)" || return 1
	[ "$got" = "$want" ]
}

dockerfile_label() { echo "dev.dsh.dockerfile=$(sha256sum "$1" | cut -d' ' -f1)"; }

# mirror prints the Debian mirror apt is configured with (deb822 or
# one-line sources), so debootstrap uses the same reachable mirror.
mirror() {
	if [ -n "${DSH_DEBIAN_MIRROR:-}" ]; then
		echo "$DSH_DEBIAN_MIRROR"
		return
	fi
	local f u
	for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -r "$f" ] || continue
		u="$(awk '
			/^URIs:/ { for (i = 2; i <= NF; i++) if ($i ~ /\/debian\/?$/) { print $i; exit } }
			/^deb[ \t]/ { for (i = 2; i <= NF; i++) if ($i ~ /^https?:.*\/debian\/?$/) { print $i; exit } }
		' "$f")"
		if [ -n "$u" ]; then
			echo "$u"
			return
		fi
	done
	echo "http://deb.debian.org/debian"
}

need() {
	command -v "$1" >/dev/null 2>&1 || die "$1 is not installed; $2"
}

check_docker() {
	need docker "install docker.io (apt-get install docker.io)"
	docker info >/dev/null 2>&1 ||
		die "the Docker engine does not answer (docker info failed); start it with: (dockerd >/tmp/dockerd.log 2>&1 &)"
}

build_debian() {
	if have_image "$debian_image"; then
		say "$debian_image present"
		return
	fi
	need debootstrap "install it (apt-get install debootstrap) or set DSH_DEBIAN_IMAGE to an existing bookworm image"
	[ "$(id -u)" = 0 ] || die "debootstrap needs root to build $debian_image; run make images as root"
	local m root
	m="$(mirror)"
	root="$(mktemp -d /tmp/dsh-debootstrap.XXXXXX)"
	# shellcheck disable=SC2064 # expand root now: the trap must remove this directory
	trap "rm -rf '$root'" EXIT
	say "debootstrap --variant=minbase $suite from $m (about a minute)"
	if ! debootstrap --variant=minbase "$suite" "$root" "$m" >"$root.log" 2>&1; then
		tail -n 20 "$root.log" >&2
		die "debootstrap failed (full log: $root.log); check that $m is reachable or set DSH_DEBIAN_MIRROR"
	fi
	rm -f "$root.log"
	# A smaller image: no package caches or lists in the base.
	rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
	say "docker import -> $debian_image"
	tar -C "$root" -c . | docker import \
		--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
		--change 'CMD ["bash"]' \
		- "$debian_image" >/dev/null
	rm -rf "$root"
	trap - EXIT
}

build_base() {
	if current "$base_image" "$here/base/Dockerfile"; then
		say "$base_image present"
		return
	fi
	say "docker build $base_image (BASE=$debian_image)"
	quiet docker build -q --build-arg "BASE=$debian_image" --label "$(dockerfile_label "$here/base/Dockerfile")" \
		-t "$base_image" "$here/base" ||
		die "docker build of $base_image failed (output above)"
}

build_fixture() {
	if current "$fixture_image" "$here/fixture/Dockerfile"; then
		say "$fixture_image present"
		return
	fi
	local ctx
	ctx="$(mktemp -d /tmp/dsh-fixture.XXXXXX)"
	# shellcheck disable=SC2064
	trap "rm -rf '$ctx'" EXIT
	if [ -x /bin/busybox ] && file -L /bin/busybox 2>/dev/null | grep -q 'statically linked'; then
		cp /bin/busybox "$ctx/busybox"
	else
		say "fetching busybox-static from Debian"
		(cd "$ctx" && apt-get download busybox-static >/dev/null 2>&1) ||
			(apt-get update >/dev/null && cd "$ctx" && apt-get download busybox-static >/dev/null) ||
			die "apt-get download busybox-static failed; check apt's sources"
		dpkg-deb -x "$ctx"/busybox-static_*.deb "$ctx/pkg"
		cp "$ctx/pkg/bin/busybox" "$ctx/busybox"
	fi
	printf 'root:x:0:0:root:/root:/bin/sh\ndsh:x:1000:1000:dsh:/tmp:/bin/sh\n' >"$ctx/passwd"
	printf 'root:x:0:\ndsh:x:1000:\n' >"$ctx/group"
	cp "$here/fixture/Dockerfile" "$ctx/"
	say "docker build $fixture_image"
	quiet docker build -q --label "$(dockerfile_label "$here/fixture/Dockerfile")" -t "$fixture_image" "$ctx" || die "docker build of $fixture_image failed (output above)"
	rm -rf "$ctx"
	trap - EXIT
}

# go_current reports whether the Go image is current: built from this
# Dockerfile, this Go toolchain and this gopls (their versions are labels).
go_current() {
	current "$go_image" "$here/go/Dockerfile" || return 1
	local got
	got="$(docker image inspect -f '{{index .Config.Labels "dev.dsh.toolchain"}}' "$go_image" 2>/dev/null)" || return 1
	[ "$got" = "$1" ]
}

build_go() {
	need go "install Go 1.26 (the image carries the host's toolchain)"
	"$here/../scripts/ensure-gopls.sh"
	local goroot gopls toolchain ctx
	goroot="$(go env GOROOT)"
	gopls="${DSH_PEERS_DIR:-$here/../.cache/peers}/bin/gopls"
	toolchain="$(go env GOVERSION)+gopls-$(cat "$(dirname "$gopls")/../gopls.version")"
	if go_current "$toolchain"; then
		say "$go_image present"
		return
	fi
	ctx="$(mktemp -d /tmp/dsh-goimage.XXXXXX)"
	# shellcheck disable=SC2064
	trap "rm -rf '$ctx'" EXIT
	cp -a "$goroot" "$ctx/go"
	rm -rf "$ctx/go/pkg/obj" "$ctx/go/test" "$ctx/go/.git"
	cp "$gopls" "$ctx/gopls"
	cp "$here/go/Dockerfile" "$ctx/"
	say "docker build $go_image ($toolchain)"
	quiet docker build -q --build-arg "BASE=$base_image" --label "$(dockerfile_label "$here/go/Dockerfile")" \
		--label "dev.dsh.toolchain=$toolchain" -t "$go_image" "$ctx" ||
		die "docker build of $go_image failed (output above)"
	rm -rf "$ctx"
	trap - EXIT
}

# build_dsh builds dsh/dsh from bin/dsh: current when the Dockerfile and
# the binary are those it was built from (their hashes are labels).
build_dsh() {
	[ -x "$dsh_binary" ] || die "$dsh_binary is missing; build it first (make build)"
	file -L "$dsh_binary" 2>/dev/null | grep -q 'statically linked' ||
		die "$dsh_binary is not statically linked; build it with CGO_ENABLED=0 (make build)"
	local ca=/etc/ssl/certs/ca-certificates.crt bin ctx
	[ -r "$ca" ] || die "$ca is missing; install the CA certificates (apt-get install ca-certificates)"
	bin="$(sha256sum "$dsh_binary" | cut -d' ' -f1)"
	if current "$dsh_repo:$dsh_version" "$here/dsh/Dockerfile" &&
		[ "$(docker image inspect -f '{{index .Config.Labels "dev.dsh.binary"}}' "$dsh_repo:$dsh_version" 2>/dev/null)" = "$bin" ]; then
		docker tag "$dsh_repo:$dsh_version" "$dsh_repo:latest"
		say "$dsh_repo:$dsh_version present"
		return
	fi
	ctx="$(mktemp -d /tmp/dsh-dshimage.XXXXXX)"
	# shellcheck disable=SC2064
	trap "rm -rf '$ctx'" EXIT
	cp "$dsh_binary" "$ctx/dsh"
	cp "$ca" "$ctx/ca-certificates.crt"
	mkdir -m 1777 "$ctx/tmp"
	cp "$here/dsh/Dockerfile" "$ctx/"
	say "docker build $dsh_repo:$dsh_version"
	quiet docker build -q --label "$(dockerfile_label "$here/dsh/Dockerfile")" --label "dev.dsh.binary=$bin" \
		--label "org.opencontainers.image.version=$dsh_version" \
		-t "$dsh_repo:$dsh_version" -t "$dsh_repo:latest" "$ctx" ||
		die "docker build of $dsh_repo:$dsh_version failed (output above)"
	rm -rf "$ctx"
	trap - EXIT
}

check_docker
build_debian
build_base
build_fixture
build_go
build_dsh
# Images a rebuild replaced are left untagged; drop those of ours.
docker image prune -f --filter label=dev.dsh.image >/dev/null 2>&1 || true
say "done: $base_image $fixture_image $go_image $dsh_repo:$dsh_version"
