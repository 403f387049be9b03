#!/usr/bin/env bash
# Fails when a dsh-labelled container, network or volume is left on the
# Docker engine: every test removes what it creates, so a leftover is a bug.
set -euo pipefail
label=dev.dsh.managed=true
left=$(
	docker ps -aq --filter "label=$label" | sed 's/^/container /'
	docker network ls -q --filter "label=$label" | sed 's/^/network /'
	docker volume ls -q --filter "label=$label" | sed 's/^/volume /'
)
if [ -n "$left" ]; then
	printf 'check-leftovers: dsh-labelled resources left after the tests (a bug in whatever created them):\n%s\n' "$left" >&2
	exit 1
fi
echo "check-leftovers: no dsh-labelled container, network or volume left"
