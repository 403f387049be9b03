package docker

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-dev/dsh/sandbox"
	"github.com/dsh-dev/dsh/sandbox/pid1"
)

// A world's only way out.
//
// Every world runs with docker's network mode "none": its network
// namespace has loopback and nothing else, so there is no route to the
// host, to other worlds or anywhere, and no resolver. A world with Egress
// gets a unix socket bind-mounted read-only at /.dsh/egress/egress.sock,
// where the egress broker (sandbox.ServeEgress) waits for the world's
// init. The init connects once, as it starts and before its world filter
// makes unix sockets unavailable (package pid1); the driver accepts that
// one connection only after checking its peer is the container's PID 1,
// then closes the listener and removes the socket, so no later process —
// of this world or any other — finds a way in. The init's relay listens
// on sandbox.ProxyAddr inside (execworld points HTTP_PROXY there); each connection
// it relays is a fresh socket pair the broker hands out, served by the
// world's proxy.
//
// Measured against an internal docker network per world (the design this
// replaced; docs/BENCHMARKS.md): joining any user-defined network costs a
// container start about as much as a whole `docker run --rm`, and an
// internal network still routes to every address of the host itself, so
// it needed host firewall rules (root, iptables) to keep worlds off host
// listeners. The socket needs neither.

const (
	egressMountPath = "/.dsh/egress"
	egressSocket    = "egress.sock"
	// brokerWait bounds how long Open waits for the init's broker
	// connection once the init answers (it connects before it serves).
	brokerWait = 10 * time.Second
)

// openEgress makes the world's host files: the socket the init's broker
// connection arrives on, and a resolv.conf without nameservers.
func (w *world) openEgress() error {
	dir, err := os.MkdirTemp("", "dsh-world-"+w.id+"-")
	if err != nil {
		return fmt.Errorf("docker: world files: %w", err)
	}
	w.tmpDir = dir
	w.egressDir = filepath.Join(dir, "egress")
	w.resolvConf = filepath.Join(dir, "resolv.conf")
	if err := os.Mkdir(w.egressDir, 0o755); err != nil {
		return fmt.Errorf("docker: world files: %w", err)
	}
	if err := os.WriteFile(w.resolvConf, []byte(noDNS), 0o644); err != nil {
		return fmt.Errorf("docker: world files: %w", err)
	}
	// The init may run as any uid: it must traverse to the socket and
	// connect. Only its connection is ever accepted.
	if err := os.Chmod(dir, 0o755); err != nil {
		return fmt.Errorf("docker: world files: %w", err)
	}
	sock := filepath.Join(w.egressDir, egressSocket)
	if w.listener, err = net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"}); err != nil {
		return fmt.Errorf("docker: egress socket: %w", err)
	}
	if err := os.Chmod(sock, 0o666); err != nil {
		return fmt.Errorf("docker: egress socket: %w", err)
	}
	return nil
}

// acceptBroker takes the init's broker connection (the init, PID 1 of the
// container, is host process initPid), removes the socket and serves the
// world's egress on it. A connection from any other process is refused.
func (w *world) acceptBroker(initPid int, egress sandbox.EgressServer) error {
	l := w.listener
	defer func() {
		l.Close() // unlinks the socket: nothing can connect any more
		w.listener = nil
	}()
	l.SetDeadline(time.Now().Add(brokerWait))
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			return fmt.Errorf("docker: the world's init did not connect to its egress broker: %w", err)
		}
		pid, err := peerPid(c)
		if err != nil || pid != initPid {
			c.Close()
			w.d.log.Warn("refused an egress broker connection that is not from the world's init", "world", w.id, "peer", pid, "init", initPid, "err", err)
			continue
		}
		w.serveDone = make(chan struct{})
		go func() {
			defer close(w.serveDone)
			if err := sandbox.ServeEgress(c, egress); err != nil {
				w.d.log.Warn("egress broker stopped", "world", w.id, "err", err)
			}
		}()
		w.broker = c
		return nil
	}
}

// peerPid is the host pid of the process at the other end of c.
func peerPid(c *net.UnixConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if serr != nil {
		return 0, serr
	}
	return int(cred.Pid), nil
}

// initConfig is the init's pid1.Config, as ConfigEnv: the world filter
// always, the broker socket and relay address with egress.
func initConfig(spec *sandbox.Spec) string {
	cfg := pid1.Config{Filter: true, UnixSockets: spec.UnixSockets}
	if spec.Egress {
		cfg.EgressSocket = egressMountPath + "/" + egressSocket
		cfg.ProxyAddr = sandbox.ProxyAddr
	}
	b, _ := json.Marshal(cfg) // plain fields: cannot fail
	return pid1.ConfigEnv + "=" + string(b)
}
