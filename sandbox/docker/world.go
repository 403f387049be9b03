package docker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"

	"github.com/dsh-dev/dsh/sandbox"
	"github.com/dsh-dev/dsh/sandbox/pid1"
)

// closeTimeout bounds the whole teardown of one world.
const closeTimeout = 30 * time.Second

// world is one open world: a container with the init as PID 1, and its
// network when it has egress.
type world struct {
	d         *Driver
	id        string
	workspace string
	env       []string // base environment of every process

	// Set while opening; read-only once Open has returned.
	containerID string
	conn        *attachConn
	init        initClient
	tmpDir      string            // the world's host files (resolv.conf, egress socket)
	egressDir   string            // host directory of the egress socket, mounted at /.dsh/egress
	resolvConf  string            // host path of the world's resolv.conf
	mapped      []string          // mount points of idmapped binds until the container runs (owner.go)
	listener    *net.UnixListener // where the init's broker connection arrives, until it has
	broker      *net.UnixConn     // the init's egress broker connection
	serveDone   chan struct{}     // closed when the broker has stopped
	fate        *containerFate
	protection  *sandbox.Protection // placeholders of protected paths, removed after the container
	// An overlay workspace (overlay.go): its directory and mount point
	// on the host, and the upper tmpfs.
	overlayDir, merged string
	upper              *os.File
	freezeOnce         sync.Once
	frozen             string
	freezeErr          error

	mu     sync.Mutex // guards closed and paused
	closed bool
	paused bool // Freeze holds (freeze.go)

	closeOnce sync.Once
	closeErr  error
}

func (w *world) isClosed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.closed
}

// ID returns the world id, the value of its dev.dsh.world label.
func (w *world) ID() string { return w.id }

// Env returns the base environment of the world's processes: the image's
// environment and the Spec's. Start merges a
// process's own Env over it.
func (w *world) Env() []string { return append([]string(nil), w.env...) }

// Start starts a process through the init. The process's Env is merged
// over the world's base environment (the process wins), so PATH from the
// image is there unless overridden (execworld sets the proxy variables). An empty Dir
// is the workspace.
func (w *world) Start(ctx context.Context, p sandbox.ProcessSpec) (sandbox.Process, error) {
	if w.isClosed() {
		return nil, ErrClosed
	}
	if w.isPaused() {
		return nil, errPaused
	}
	p.Env = sandbox.MergeEnv(w.env, p.Env)
	if p.Dir == "" {
		p.Dir = w.workspace
	}
	proc, err := w.init.Start(ctx, p)
	if err != nil {
		return nil, err
	}
	return pid1.ExplainLoss(proc, w.fate.describe), nil
}

// Close kills every process (closing the init's connection makes it
// SIGKILL everything and exit), then removes the container, stops the
// egress socket and removes the world's host files. It is idempotent and safe
// to call concurrently; every call returns the first call's result.
func (w *world) Close() error {
	w.closeOnce.Do(func() { w.closeErr = w.teardown() })
	return w.closeErr
}

// teardown undoes whatever part of Open succeeded, in reverse order.
func (w *world) teardown() error {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	var errs []error
	if w.init != nil {
		w.init.Close()
	}
	if w.conn != nil {
		w.conn.Close()
	}
	if w.containerID != "" {
		if err := w.d.removeContainer(ctx, w.containerID); err != nil {
			errs = append(errs, err)
		}
	}
	if err := w.protection.Close(); err != nil {
		errs = append(errs, err)
	}
	if w.listener != nil {
		w.listener.Close()
	}
	if w.broker != nil {
		w.broker.Close()
		select {
		case <-w.serveDone:
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("docker: egress broker of world %s did not stop", w.id))
		}
	}
	if err := w.detachMapped(); err != nil {
		errs = append(errs, err)
	}
	if err := w.closeOverlay(); err != nil {
		errs = append(errs, err)
	}
	if w.tmpDir != "" {
		if err := os.RemoveAll(w.tmpDir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeContainer removes a container and waits until it is gone. The
// daemon may be auto-removing it already (the init exits when its
// connection closes), so "not found" and "removal in progress" are fine.
func (d *Driver) removeContainer(ctx context.Context, id string) error {
	err := d.cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true})
	if err != nil && !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) {
		return fmt.Errorf("docker: removing container %s: %w", id[:12], err)
	}
	// Close promises the container is gone when it returns, so wait for
	// the daemon to finish removing it.
	for delay := 5 * time.Millisecond; ; delay = min(2*delay, 200*time.Millisecond) {
		if _, err := d.cli.ContainerInspect(ctx, id); cerrdefs.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("docker: container %s still exists: %w", id[:12], ctx.Err())
		case <-time.After(delay):
		}
	}
}
