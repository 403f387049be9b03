#!/usr/bin/env bash
# Makes sure a Docker engine answers on this machine, installing and
# starting it when needed (make test and make images call this), and that
# the host tools the tests and benchmarks use are installed.
set -euo pipefail

say() { printf 'ensure-docker: %s\n' "$*" >&2; }

apt_packages=()
command -v dockerd     >/dev/null 2>&1 || apt_packages+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || apt_packages+=(debootstrap)
command -v bwrap       >/dev/null 2>&1 || apt_packages+=(bubblewrap)
command -v ip          >/dev/null 2>&1 || apt_packages+=(iproute2)
command -v curl        >/dev/null 2>&1 || apt_packages+=(curl)

if ((${#apt_packages[@]})); then
	if [ "$(id -u)" != 0 ]; then
		say "missing ${apt_packages[*]}; install them (as root: apt-get install ${apt_packages[*]}) and run again"
		exit 1
	fi
	say "installing ${apt_packages[*]} with apt (one-time set-up)"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${apt_packages[@]}" >/dev/null
fi

if docker info >/dev/null 2>&1; then
	exit 0
fi

if [ "$(id -u)" != 0 ]; then
	say "the Docker engine does not answer and this user cannot start it; start dockerd (or ask for access to /var/run/docker.sock) and run again"
	exit 1
fi

if ! pgrep -x dockerd >/dev/null 2>&1; then
	say "starting dockerd in the background (log: /var/log/dsh-dockerd.log)"
	# A stale pid file from an earlier machine state would stop dockerd.
	rm -f /var/run/docker.pid
	nohup dockerd >/var/log/dsh-dockerd.log 2>&1 &
fi

for _ in $(seq 1 120); do
	if docker info >/dev/null 2>&1; then
		say "Docker engine is up ($(docker version --format '{{.Server.Version}}, API {{.Server.APIVersion}}'))"
		exit 0
	fi
	sleep 0.5
done
say "dockerd did not answer within 60s; last lines of /var/log/dsh-dockerd.log:"
tail -n 20 /var/log/dsh-dockerd.log >&2 || true
exit 1
