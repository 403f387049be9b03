package docker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"github.com/dsh-dev/dsh/sandbox"
)

// Options configures a Driver. The zero value works.
type Options struct {
	// InitPath is the host path of the static dsh binary that runs as PID 1
	// of every world. If empty, the running executable is used.
	InitPath string
	// Client talks to the Docker engine. If nil, one is made from the
	// environment (DOCKER_HOST, …) with API version negotiation; Close
	// closes it.
	Client *client.Client
	// Logger receives the driver's diagnostics. If nil, they are discarded.
	Logger *slog.Logger
	// Image is the image Probe checks (the configuration's sandbox.image).
	// If empty, dsh/base:latest.
	Image string

	// entrypoint replaces PID 1's argv and dial the init's client (tests
	// of the transport only).
	entrypoint []string
	dial       func(context.Context, io.ReadWriteCloser) (initClient, error)
}

// Driver opens worlds as docker containers.
type Driver struct {
	cli      *client.Client
	ownCli   bool
	initPath string
	log      *slog.Logger
	owner    owner
	entry    []string
	image    string // for Probe
	dial     func(context.Context, io.ReadWriteCloser) (initClient, error)
}

// New returns a docker driver. It checks that the init binary is static
// but does not contact the daemon; Open does.
func New(opts *Options) (*Driver, error) {
	if opts == nil {
		opts = &Options{}
	}
	d := &Driver{cli: opts.Client, log: opts.Logger, owner: self(), entry: opts.entrypoint, dial: opts.dial, image: opts.Image}
	if d.dial == nil {
		d.dial = dialInit
	}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	d.initPath = opts.InitPath
	if d.initPath == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("docker: finding dsh's own binary for the init: %w", err)
		}
		d.initPath = exe
	}
	abs, err := filepath.Abs(d.initPath)
	if err != nil {
		return nil, fmt.Errorf("docker: init binary %s: %w", d.initPath, err)
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return nil, fmt.Errorf("docker: init binary %s: %w", d.initPath, err)
	}
	d.initPath = abs
	if d.entry == nil {
		if err := checkStaticInit(d.initPath); err != nil {
			return nil, err
		}
		d.entry = []string{initMountPath, initArg}
	}
	if d.cli == nil {
		cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
		if err != nil {
			return nil, fmt.Errorf("docker: connecting to the engine: %w", err)
		}
		d.cli, d.ownCli = cli, true
	}
	// The init binary and the egress socket are bind-mounted from this
	// host's filesystem; on a remote engine the same paths would name the
	// remote host's files.
	if h := d.cli.DaemonHost(); !strings.HasPrefix(h, "unix://") {
		if d.ownCli {
			d.cli.Close()
		}
		return nil, fmt.Errorf("%w: engine at %s: the docker driver needs the engine on this host (a unix socket), because it bind-mounts dsh's binary and the egress socket; unset DOCKER_HOST or use the native driver", ErrRemoteEngine, h)
	}
	return d, nil
}

// Name returns "docker".
func (d *Driver) Name() string { return sandbox.DriverDocker }

// Close releases the engine client the driver made. Worlds are closed by
// their own Close.
func (d *Driver) Close() error {
	if d.ownCli {
		return d.cli.Close()
	}
	return nil
}

// Open starts a world for spec: its container, named and labelled after
// opts.ID, with the init as PID 1, the init's connection, and with
// spec.Egress the broker that opts.Egress serves. Everything made before
// a failure is removed again.
func (d *Driver) Open(ctx context.Context, spec *sandbox.Spec, opts *sandbox.OpenOptions) (_ sandbox.Instance, err error) {
	if spec == nil {
		return nil, &specError{field: "", msg: "nil Spec"}
	}
	ws, err := sandbox.Validate(spec)
	if err != nil {
		return nil, invalid(err)
	}
	id, egress, err := opts.Resolve(spec)
	if err != nil {
		return nil, invalid(err)
	}
	// The real path is what is bound: the path checked is the one mounted.
	if ws != spec.Workspace {
		c := *spec
		c.Workspace = ws
		spec = &c
	}
	img, err := d.cli.ImageInspect(ctx, spec.Image)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return nil, &imageError{spec.Image}
		}
		return nil, fmt.Errorf("docker: inspecting image %q: %w", spec.Image, err)
	}
	var imgEnv []string
	if img.Config != nil {
		imgEnv = img.Config.Env
	}
	wid, err := worldIdentity(spec)
	if err != nil {
		return nil, err
	}

	w := &world{d: d, id: id, workspace: spec.Workspace}
	defer func() {
		if err != nil {
			if terr := w.teardown(); terr != nil {
				err = fmt.Errorf("%w (cleaning up after it: %v)", err, terr)
			}
		}
	}()
	labels := d.owner.labels(w.id, spec.Labels)
	plan := &containerPlan{
		Name:       "dsh-" + w.id,
		Image:      spec.Image,
		User:       wid.user,
		InitPath:   d.initPath,
		Entrypoint: d.entry,
		Labels:     labels,
	}
	plan.Home, _ = os.UserHomeDir()
	jdir, err := journalDir()
	if err != nil {
		return nil, err
	}
	// A dead dsh's placeholders go first: left in this workspace, they
	// would read below as the user's own paths, which no world removes.
	// (Reap reports what it cannot remove.)
	_ = reapPlaceholders(jdir, d.owner.host)
	if w.protection, err = sandbox.PrepareProtected(spec.Workspace, spec.Protected, spec.Masks, false, filepath.Join(jdir, d.owner.journalName(w.id))); err != nil {
		return nil, invalid(err)
	}
	plan.Protected = w.protection.Mounts
	if spec.Egress {
		if err := w.openEgress(); err != nil {
			return nil, err
		}
		plan.EgressDir = w.egressDir
		plan.ResolvConf = w.resolvConf
	}
	if spec.Mode() == sandbox.WorkspaceOverlay {
		lower, shift := spec.Workspace, uint32(0)
		if wid.idmap {
			if lower, err = w.mapOne(spec.Workspace); err != nil {
				return nil, err
			}
			shift = MappedUID
		}
		if plan.WorkspaceSource, err = w.openOverlay(spec, lower, shift); err != nil {
			return nil, err
		}
	}
	plan.Env = sandbox.MergeEnv(spec.Env, []string{initConfig(spec)})
	w.env = sandbox.MergeEnv(imgEnv, spec.Env)

	cfg, host, err := containerConfig(spec, plan)
	if err != nil {
		return nil, err
	}
	host.GroupAdd = wid.groups
	if wid.idmap {
		if err := w.mapSources(spec, host); err != nil {
			return nil, err
		}
	}
	created, err := d.cli.ContainerCreate(ctx, cfg, host, nil, nil, plan.Name)
	if err != nil {
		return nil, fmt.Errorf("docker: creating the world container: %w", err)
	}
	w.containerID = created.ID
	w.fate = &containerFate{d: d, id: created.ID}
	// Attach before start, so not one byte the init writes is lost.
	hj, err := d.cli.ContainerAttach(ctx, created.ID, container.AttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		return nil, fmt.Errorf("docker: attaching to the world container: %w", err)
	}
	w.conn = newAttachConn(hj)
	if err := d.cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		return nil, fmt.Errorf("docker: starting the world container: %w", err)
	}
	// The container's binds of idmapped sources are its own now.
	if err := w.detachMapped(); err != nil {
		return nil, err
	}
	if w.init, err = d.dial(ctx, w.conn); err != nil {
		return nil, w.initFailed(err)
	}
	if w.merged != "" {
		if err := w.checkOverlaySeen(ctx, spec.Workspace); err != nil {
			return nil, err
		}
	}
	if spec.Egress {
		ins, err := d.cli.ContainerInspect(ctx, created.ID)
		if err != nil {
			return nil, fmt.Errorf("docker: inspecting the world container: %w", err)
		}
		if ins.State == nil || ins.State.Pid == 0 {
			return nil, fmt.Errorf("docker: the world container has no running init")
		}
		if err := w.acceptBroker(ins.State.Pid, egress); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// initFailed explains an init that did not answer, with what it said.
func (w *world) initFailed(err error) error {
	msg := strings.TrimSpace(w.conn.Stderr())
	if msg == "" {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if ins, ierr := w.d.cli.ContainerInspect(ctx, w.containerID); ierr == nil && ins.State != nil && ins.State.Error != "" {
			msg = ins.State.Error
		}
	}
	if msg != "" {
		return fmt.Errorf("docker: the world's init did not start: %w (init said: %s)", err, msg)
	}
	return fmt.Errorf("docker: the world's init did not start: %w", err)
}
