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
// Network: every world runs with docker's network mode "none" — loopback
// only, no route to the host, to other worlds or anywhere, no resolver.
// A world with Egress gets a unix socket, mounted read-only inside, where
// the init makes its one egress broker connection (accepted only from the
// container's PID 1, then the socket is removed); the init's relay listens
// on sandbox.ProxyAddr and execworld points HTTP_PROXY there (egress.go). This
// replaced an internal bridge network per world after measuring it
// (docs/BENCHMARKS.md): joining a user-defined network costs about a
// whole `docker run --rm` more per world, and such a network still routes
// to every address of the host, which took root-only firewall rules to
// close.
//
// Every container carries the label dev.dsh.managed=true, the world id
// and its owner (pid, process start time, host), so [Driver.Reap] can
// remove what a crashed dsh left behind. Images are never pulled: a
// missing image is an error naming `make images`.
package docker
