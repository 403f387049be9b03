// Package docker is the sandbox driver on the Docker Engine API.
//
// Every world is one long-lived container whose PID 1 is dsh's own static
// binary running the init (package sandbox/pid1). The driver carries the
// init's control connection over the container's attach stream, so every
// process of the world is started, signalled and killed by the init: the
// Engine API cannot kill an exec'd process, the init can.
//
// Confinement comes from one [sandbox.Spec]: read-only root filesystem,
// tmpfs /tmp, no capabilities, no_new_privs, the default seccomp filter,
// memory/pids/cpu limits, a non-root user, the workspace bind-mounted
// read-write at its host path, and no docker socket.
//
// Network: a world without Egress gets no network at all. A world with
// Egress gets its own internal bridge network (no route out; a resolv.conf
// without nameservers, so no DNS); the egress proxy listens on that
// network's gateway address and HTTP_PROXY points at it. The host firewall
// lets the world reach that one port of the host and nothing else (an
// internal network still routes to every address of the host itself), so
// opening a world with Egress needs root and iptables.
//
// Per-world networks rather than one shared network with inter-container
// traffic disabled: measured here (docs/BENCHMARKS.md), creating and
// removing a network costs about a quarter of `docker run --rm`, while a
// container joining an internal network that already exists costs more
// than the whole default `docker run --rm` — so sharing saves little, and
// per-world networks keep worlds apart at layer 3 by construction (no
// reliance on br_netfilter rules) and tell worlds apart by listener (one
// proxy listener per world, no source-address table). The price is the
// daemon's address pools, which hold about 30 networks by default.
//
// Every container and network carries the label dev.dsh.managed=true, the
// world id and its owner (pid, process start time, host), so [Driver.Reap]
// can remove what a crashed dsh left behind. Images are never pulled: a
// missing image is an error naming `make images`.
package docker
