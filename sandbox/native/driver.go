package native

import (
	"context"
	"io"

	"github.com/dsh-dev/dsh/sandbox"
)

// Options configures the driver. The zero value works.
type Options struct {
	// Executable is the binary re-executed as the init; it must dispatch
	// InitArg to InitMain. If empty, os.Executable() (dsh itself).
	Executable string
	// StateDir holds one private directory per world. If empty, the first
	// of sandbox.StateDirs the caller may use: /run/dsh-native for root,
	// else /run/user/UID/dsh-native, else /tmp/dsh-native-UID (never one
	// the environment names). No world's workspace or bind may overlap
	// it.
	StateDir string
	// CgroupParent is the cgroup, relative to the root of each hierarchy
	// (memory, pids, cpu and freezer on v1; the unified one on v2), under
	// which worlds that have limits get their cgroups. An unprivileged
	// caller needs it delegated: the directory, its cgroup.procs (and
	// tasks on v1) owned by the caller. If empty, "dsh-native".
	CgroupParent string
	// IDBase is the first host uid and gid of the 65536 ids a root dsh's
	// worlds are mapped to. If zero, the range /etc/subuid and
	// /etc/subgid give user "dsh" (else "root"), else DefaultIDBase.
	// Unused for an unprivileged caller, whose world is its own uid.
	IDBase uint32
	// Stderr receives the init's own diagnostics. If nil, discarded.
	Stderr io.Writer

	// What the caller opens worlds with, for Probe's report: NoLimits
	// means worlds get no memory, pids or cpu limits (sandbox.limits.off),
	// so they need no cgroup; Masks and HomeAllow are added to
	// sandbox.DefaultMasks and make the home a world sees.
	NoLimits         bool
	Masks, HomeAllow []string
}

// Driver opens native sandboxes. It is safe for concurrent use.
type Driver struct {
	opts Options
}

// New returns a driver; opts may be nil.
func New(opts *Options) *Driver {
	d := &Driver{}
	if opts != nil {
		d.opts = *opts
	}
	return d
}

// Name returns "native".
func (d *Driver) Name() string { return sandbox.DriverNative }

// Reap removes the cgroups and state directories of worlds whose dsh
// crashed (sandbox.Reaper); live worlds, this process's or another
// dsh's, are left alone.
func (d *Driver) Reap(ctx context.Context) error {
	base, err := stateBase(d.opts.StateDir)
	if err != nil {
		return err
	}
	parent, err := d.cgroupParent()
	if err != nil {
		return err
	}
	_, err = reap(base, parent)
	return err
}

func (d *Driver) cgroupParent() (string, error) {
	if d.opts.CgroupParent == "" {
		return cgroupParent, nil
	}
	return d.opts.CgroupParent, checkCgroupParent(d.opts.CgroupParent)
}

// Open starts a world for spec: the init in its namespaces and cgroup,
// serving pid1, its cgroup named after opts.ID. ctx
// bounds the setup only; the world lives until Close.
func (d *Driver) Open(ctx context.Context, spec *sandbox.Spec, opts *sandbox.OpenOptions) (sandbox.Instance, error) {
	l, err := d.start(ctx, spec, opts, nil, nil, nil)
	if err != nil {
		return nil, err
	}
	return newInstance(l)
}
