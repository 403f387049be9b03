package docker

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/dsh-dev/dsh/sandbox"
)

// Report says what the docker driver can do on this machine (dsh doctor).
type Report struct {
	// Engine is the daemon's version and API version when it answered.
	Engine      string
	EngineError string
	// CgroupVersion is the daemon's cgroup version ("1" or "2") and
	// CgroupDriver its cgroup driver (cgroupfs, systemd).
	CgroupVersion string
	CgroupDriver  string
	// Seccomp reports whether the daemon supports seccomp filters.
	Seccomp bool
	// Image is the image probed; ImagePresent whether it is there locally.
	Image        string
	ImagePresent bool
	// InitError says why the init binary cannot be used ("" when it can).
	InitError string
	// TrialTime is how long a trial world took to open, run `true` and
	// close; TrialError why it failed.
	TrialTime  time.Duration
	TrialError string
	// Problems lists what keeps the driver from working, each with its fix.
	Problems []string
}

// Ready reports whether the driver can open worlds of the probed image.
func (r *Report) Ready() bool { return len(r.Problems) == 0 }

// Probe checks the init binary with a driver made from opts (nil: the
// defaults), then what Driver.Inspect checks. An empty image means
// dsh/base:latest. It is the report of a driver New refuses too.
func Probe(ctx context.Context, opts *Options, image string) *Report {
	d, err := New(opts)
	if err != nil {
		return &Report{Image: probeImage(image), InitError: err.Error(), Problems: []string{err.Error()}}
	}
	defer d.Close()
	return d.Inspect(ctx, image)
}

// Probe reports what the driver can do here for Options.Image
// (sandbox.Prober).
func (d *Driver) Probe(ctx context.Context) sandbox.ProbeReport {
	return d.Inspect(ctx, d.image).ProbeReport()
}

func probeImage(image string) string {
	if image == "" {
		return "dsh/base:latest"
	}
	return image
}

// Inspect checks the engine and the image, and opens a trial world (no
// network) when they are fine. An empty image means dsh/base:latest.
func (d *Driver) Inspect(ctx context.Context, image string) *Report {
	image = probeImage(image)
	r := &Report{Image: image}
	info, err := d.cli.Info(ctx)
	if err != nil {
		r.EngineError = err.Error()
		r.Problems = append(r.Problems, "the Docker engine does not answer ("+err.Error()+"); start it (dockerd) or set DOCKER_HOST")
		return r
	}
	r.Engine = fmt.Sprintf("Docker Engine %s, API %s", info.ServerVersion, d.cli.ClientVersion())
	r.CgroupVersion = info.CgroupVersion
	r.CgroupDriver = info.CgroupDriver
	r.Seccomp = slices.ContainsFunc(info.SecurityOptions, func(o string) bool { return strings.Contains(o, "name=seccomp") })
	if !r.Seccomp {
		r.Problems = append(r.Problems, "the Docker engine has no seccomp support; worlds would run without a syscall filter")
	}
	if _, err := d.cli.ImageInspect(ctx, image); err != nil {
		if cerrdefs.IsNotFound(err) {
			r.Problems = append(r.Problems, (&imageError{image}).Error())
		} else {
			r.Problems = append(r.Problems, fmt.Sprintf("inspecting image %q: %v", image, err))
		}
		return r
	}
	r.ImagePresent = true
	if len(r.Problems) > 0 {
		return r
	}
	start := time.Now()
	if err := trial(ctx, d, image); err != nil {
		r.TrialError = err.Error()
		r.Problems = append(r.Problems, "trial world: "+err.Error())
		return r
	}
	r.TrialTime = time.Since(start)
	return r
}

// ProbeReport is r in the shape every driver reports.
func (r *Report) ProbeReport() sandbox.ProbeReport {
	rep := sandbox.ProbeReport{Driver: sandbox.DriverDocker, Confines: true, Ready: r.Ready()}
	engine := r.Engine
	if r.EngineError != "" {
		engine = r.EngineError
	}
	rep.Add("engine", r.EngineError == "" && r.Engine != "", engine)
	if r.Engine != "" {
		rep.Add("cgroups", true, fmt.Sprintf("v%s, driver %s", r.CgroupVersion, r.CgroupDriver))
		rep.Add("seccomp", r.Seccomp, "")
		rep.Add("image "+r.Image, r.ImagePresent, "")
	}
	if r.InitError != "" {
		rep.Add("init binary", false, r.InitError)
	}
	if r.TrialTime > 0 || r.TrialError != "" {
		trial := fmt.Sprintf("trial world up and down in %v", r.TrialTime.Round(100_000))
		if r.TrialError != "" {
			trial = r.TrialError
		}
		rep.Add("trial world", r.TrialError == "", trial)
	}
	if !rep.Ready {
		rep.Problems = r.Problems
	}
	return rep
}

// trial opens a world on an empty workspace, runs `true` and closes it.
func trial(ctx context.Context, d *Driver, image string) error {
	ws, err := os.MkdirTemp("", "dsh-docker-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(ws)
	if err := os.Chmod(ws, 0o777); err != nil {
		return err
	}
	spec := sandbox.DefaultSpec(ws)
	spec.Image = image
	inst, err := d.Open(ctx, spec, nil)
	if err != nil {
		return err
	}
	defer inst.Close()
	p, err := inst.Start(ctx, sandbox.ProcessSpec{Argv: []string{"true"}})
	if err != nil {
		return err
	}
	go io.Copy(io.Discard, p.Stdout())
	go io.Copy(io.Discard, p.Stderr())
	st, err := p.Wait()
	if err != nil {
		return err
	}
	if st.Code != 0 || st.Signal != 0 {
		return fmt.Errorf("`true` in the trial world: %v", st)
	}
	return inst.Close()
}
