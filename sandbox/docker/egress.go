package docker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dsh-dev/dsh/sandbox"
)

// A world's only way out.
//
// Every world runs with docker's network mode "none": its network
// namespace has loopback and nothing else, so there is no route to the
// host, to other worlds or anywhere, and no resolver. A world with Egress
// gets a unix socket, served by Spec.Egress, bind-mounted read-only at
// /.dsh/egress/egress.sock; inside, the forwarder (`dsh __egress-forward`,
// started through the init) listens on 127.0.0.1:3128 and joins each
// connection to the socket, and HTTP_PROXY points there. The proxy knows
// the world by the socket it accepted on.
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
	// forwardWait bounds the forwarder's start.
	forwardWait = 30 * time.Second
)

// openEgress makes the world's host files: the egress socket (served by
// egress from now on) and a resolv.conf without nameservers.
func (w *world) openEgress(egress sandbox.EgressServer) error {
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
	// The world's user (any uid) must traverse to the socket and connect.
	if err := os.Chmod(dir, 0o755); err != nil {
		return fmt.Errorf("docker: world files: %w", err)
	}
	sock := filepath.Join(w.egressDir, egressSocket)
	if w.listener, err = net.Listen("unix", sock); err != nil {
		return fmt.Errorf("docker: egress socket: %w", err)
	}
	if err := os.Chmod(sock, 0o666); err != nil {
		return fmt.Errorf("docker: egress socket: %w", err)
	}
	w.serveDone = make(chan struct{})
	go func() {
		defer close(w.serveDone)
		if err := egress.Serve(w.listener); err != nil && !errors.Is(err, net.ErrClosed) {
			w.d.log.Warn("egress proxy stopped", "world", w.id, "err", err)
		}
	}()
	return nil
}

// proxyVars points every proxy variable at the forwarder.
func proxyVars() []string {
	u := "http://127.0.0.1:" + strconv.Itoa(proxyPort)
	return []string{"HTTP_PROXY=" + u, "HTTPS_PROXY=" + u, "http_proxy=" + u, "https_proxy=" + u}
}

// maxForwarderRestarts bounds how often a world's forwarder is restarted
// after it dies (a command in the world may kill every process of its
// user); past it the world keeps running without egress.
const maxForwarderRestarts = 20

// startForwarder starts the in-world forwarder through the init, waits
// until it listens, and restarts it when it dies while the world is open.
func (w *world) startForwarder(ctx context.Context) error {
	p, err := w.forwarderOnce(ctx)
	if err != nil {
		return err
	}
	go w.superviseForwarder(p)
	return nil
}

func (w *world) superviseForwarder(p sandbox.Process) {
	for restarts := 0; ; restarts++ {
		p.Wait()
		if w.isClosed() {
			return
		}
		if restarts == maxForwarderRestarts {
			w.d.log.Warn("egress forwarder keeps dying; the world has no egress now", "world", w.id)
			return
		}
		time.Sleep(time.Duration(restarts) * 50 * time.Millisecond)
		var err error
		if p, err = w.forwarderOnce(context.Background()); err != nil {
			if !w.isClosed() {
				w.d.log.Warn("restarting the egress forwarder", "world", w.id, "err", err)
			}
			return
		}
	}
}

func (w *world) forwarderOnce(ctx context.Context) (sandbox.Process, error) {
	ctx, cancel := context.WithTimeout(ctx, forwardWait)
	defer cancel()
	p, err := w.init.Start(ctx, sandbox.ProcessSpec{
		Argv: []string{initMountPath, ForwardArg, "127.0.0.1:" + strconv.Itoa(proxyPort), egressMountPath + "/" + egressSocket},
		Dir:  "/",
		Env:  w.env,
	})
	if err != nil {
		return nil, fmt.Errorf("docker: starting the egress forwarder: %w", err)
	}
	stderr := newTailBuffer(4 << 10)
	go io.Copy(stderr, p.Stderr())
	ready := make(chan error, 1)
	go func() {
		r := bufio.NewReader(p.Stdout())
		line, err := r.ReadString('\n')
		if err == nil && strings.TrimSpace(line) != forwardReady {
			err = fmt.Errorf("unexpected output %q", line)
		}
		ready <- err
		io.Copy(io.Discard, r)
	}()
	select {
	case err = <-ready:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		p.Signal(syscall.SIGKILL)
		return nil, fmt.Errorf("docker: the egress forwarder did not start: %v (it said: %s)", err, strings.TrimSpace(stderr.String()))
	}
	return p, nil
}
