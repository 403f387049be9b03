package workspace

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dsh-dev/dsh/internal/config"
	"github.com/dsh-dev/dsh/internal/lazyre"
	"github.com/dsh-dev/dsh/sandbox"
)

// Bounds of a request's inputs.
const (
	// MaxLabels is the most labels a workspace has.
	MaxLabels = 32
	// MaxLabelValue is the most bytes of one label's value.
	MaxLabelValue = 256
	// MaxAllow is the most egress entries of a workspace.
	MaxAllow = 64
	// MaxImage is the longest image reference.
	MaxImage = 255
)

var (
	nameRE  = lazyre.New(`^[a-z0-9][a-z0-9-]{0,62}$`)
	labelRE = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._/-]{0,62}$`)
	imageRE = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._/:@+-]*$`)
)

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// ValidName checks a workspace name.
func ValidName(name string) error {
	if !nameRE().MatchString(name) {
		return invalid("name %q: use 1–63 of a-z, 0-9 and '-', starting with a letter or digit (e.g. \"build-42\")", name)
	}
	return nil
}

// normalize checks req and fills its defaults from the manager's
// options, returning the template (with the default driver) and the
// TTL and idle timeout to use.
func (m *Mgr) normalize(req *CreateRequest) (*CreateRequest, error) {
	if req == nil {
		return nil, invalid("no create request given")
	}
	r := *req
	if r.Name != "" {
		if err := ValidName(r.Name); err != nil {
			return nil, err
		}
	}
	if r.Driver == "" {
		r.Driver = m.opts.DefaultDriver
	}
	t, err := normalTemplate(withDefaultImage(r.Template, m.opts.DefaultImage))
	if err != nil {
		return nil, err
	}
	r.Template = t
	if len(r.Allow) > MaxAllow {
		return nil, invalid("allow: %d entries, at most %d are accepted; allow a CIDR or fewer hosts", len(r.Allow), MaxAllow)
	}
	for i, a := range r.Allow {
		if a == "" || strings.ContainsAny(a, " \t\r\n") || len(a) > 512 {
			return nil, invalid("allow[%d] %q: write an entry as HOST:PORT or a CIDR, without spaces", i, a)
		}
	}
	r.Allow = append([]string(nil), r.Allow...)
	ttl := time.Duration(r.TTL)
	switch {
	case ttl < 0:
		return nil, invalid("ttl %s is negative; give a positive duration such as \"1h\" or none for the server's default (%s)", ttl, m.opts.DefaultTTL)
	case ttl == 0:
		ttl = m.opts.DefaultTTL
	case ttl > m.opts.MaxTTL:
		return nil, invalid("ttl %s is beyond the server's maximum of %s; ask for at most that and extend later", ttl, m.opts.MaxTTL)
	}
	r.TTL = Duration(ttl)
	idle := time.Duration(r.IdleTimeout)
	switch {
	case idle < 0:
		return nil, invalid("idle_timeout %s is negative; give a positive duration such as \"15m\" or none for the server's default (%s)", idle, m.opts.DefaultIdleTimeout)
	case idle == 0:
		idle = m.opts.DefaultIdleTimeout
	case idle > m.opts.MaxTTL:
		return nil, invalid("idle_timeout %s is beyond the server's maximum TTL of %s; give a shorter one", idle, m.opts.MaxTTL)
	}
	r.IdleTimeout = Duration(idle)
	labels, err := validLabels(r.Labels)
	if err != nil {
		return nil, err
	}
	r.Labels = labels
	return &r, nil
}

// withDefaultImage gives a docker template that names no image the
// server's default one.
func withDefaultImage(t Template, img string) Template {
	if t.Driver == sandbox.DriverDocker && t.Image == "" {
		t.Image = img
	}
	return t
}

// normalTemplate checks a template's driver, image and limits.
func normalTemplate(t Template) (Template, error) {
	if !nameRE().MatchString(t.Driver) {
		return t, invalid("driver %q: name a driver such as \"native\" or \"docker\"", t.Driver)
	}
	if t.Image != "" {
		if len(t.Image) > MaxImage || !imageRE().MatchString(t.Image) {
			return t, invalid("image %q: give an image reference such as \"dsh/base:latest\" (at most %d characters, no spaces)", t.Image, MaxImage)
		}
	}
	if t.Limits.Memory != "" {
		n, err := config.ParseSize(t.Limits.Memory)
		if err == nil {
			err = sandbox.CheckMemory(n)
		}
		if err != nil {
			return t, invalid("limits.memory: %v", err)
		}
	}
	if t.Limits.Pids != 0 {
		if err := sandbox.CheckPids(int64(t.Limits.Pids)); err != nil {
			return t, invalid("limits.pids: %v (or none for the server's default)", err)
		}
	}
	if t.Limits.CPUs != 0 {
		if err := sandbox.CheckCPUs(t.Limits.CPUs); err != nil {
			return t, invalid("limits.cpus: %v (or none for the server's default)", err)
		}
	}
	return t, nil
}

func validLabels(in map[string]string) (map[string]string, error) {
	if len(in) == 0 {
		return nil, nil
	}
	if len(in) > MaxLabels {
		return nil, invalid("labels: %d given, at most %d are accepted", len(in), MaxLabels)
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		if !labelRE().MatchString(k) {
			return nil, invalid("label key %q: use 1–63 of A-Z, a-z, 0-9, '.', '_', '/' and '-', starting with a letter or digit", k)
		}
		if len(v) > MaxLabelValue || !utf8.ValidString(v) {
			return nil, invalid("label %q: its value must be UTF-8 of at most %d bytes", k, MaxLabelValue)
		}
		out[k] = v
	}
	return out, nil
}

// templateKey is what makes two templates equal: the memory limit
// compared as bytes, so "32MiB" and "32m" are one template.
type templateKey struct {
	driver, image string
	memory        int64
	pids          int
	cpus          float64
}

func keyOf(t Template) templateKey {
	k := templateKey{driver: t.Driver, image: t.Image, pids: t.Limits.Pids, cpus: t.Limits.CPUs}
	if t.Limits.Memory != "" {
		k.memory, _ = config.ParseSize(t.Limits.Memory)
	}
	return k
}

// validOptions checks a manager's options and fills their defaults.
func validOptions(in *Options) (Options, error) {
	var o Options
	if in != nil {
		o = *in
	}
	if o.Root == "" {
		return o, invalid("Options.Root is empty; give the directory under which workspaces keep their state and files")
	}
	if o.Opener == nil {
		return o, invalid("Options.Opener is nil; give the Opener that opens the workspaces' worlds")
	}
	if o.DefaultDriver == "" {
		o.DefaultDriver = "native"
	}
	if err := o.Owner.check(); err != nil {
		return o, err
	}
	if !nameRE().MatchString(o.DefaultDriver) {
		return o, invalid("Options.DefaultDriver %q: name a driver such as \"native\" or \"docker\"", o.DefaultDriver)
	}
	if o.DefaultImage != "" && (len(o.DefaultImage) > MaxImage || !imageRE().MatchString(o.DefaultImage)) {
		return o, invalid("Options.DefaultImage %q: give an image reference such as \"dsh/base:latest\"", o.DefaultImage)
	}
	durs := []struct {
		name string
		d    *time.Duration
		def  time.Duration
	}{
		{"DefaultTTL", &o.DefaultTTL, DefaultTTL},
		{"MaxTTL", &o.MaxTTL, DefaultMaxTTL},
		{"DefaultIdleTimeout", &o.DefaultIdleTimeout, DefaultIdleTimeout},
		{"ReleaseTimeout", &o.ReleaseTimeout, DefaultReleaseTimeout},
	}
	for _, d := range durs {
		if *d.d < 0 {
			return o, invalid("Options.%s %s is negative; give a positive duration or zero for %s", d.name, *d.d, d.def)
		}
		if *d.d == 0 {
			*d.d = d.def
		}
	}
	if o.DefaultTTL > o.MaxTTL {
		return o, invalid("Options.DefaultTTL %s is beyond Options.MaxTTL %s; raise the maximum or lower the default", o.DefaultTTL, o.MaxTTL)
	}
	if o.DefaultIdleTimeout > o.MaxTTL {
		return o, invalid("Options.DefaultIdleTimeout %s is beyond Options.MaxTTL %s; lower it", o.DefaultIdleTimeout, o.MaxTTL)
	}
	if o.MaxWorkspaces < 0 {
		return o, invalid("Options.MaxWorkspaces %d is negative; give a positive limit or zero for %d", o.MaxWorkspaces, DefaultMaxWorkspaces)
	}
	if o.MaxWorkspaces == 0 {
		o.MaxWorkspaces = DefaultMaxWorkspaces
	}
	if o.PoolConcurrency < 0 {
		return o, invalid("Options.PoolConcurrency %d is negative; give a positive number or zero for %d", o.PoolConcurrency, DefaultPoolConcurrency)
	}
	if o.PoolConcurrency == 0 {
		o.PoolConcurrency = DefaultPoolConcurrency
	}
	seen := map[templateKey]bool{}
	o.Pool = append([]PoolSpec(nil), o.Pool...)
	for i := range o.Pool {
		p := &o.Pool[i]
		if p.Size < 0 || p.Size > MaxPoolSize {
			return o, invalid("Options.Pool[%d].Size %d: give a size from 0 to %d", i, p.Size, MaxPoolSize)
		}
		if p.Template.Driver == "" {
			p.Template.Driver = o.DefaultDriver
		}
		t, err := normalTemplate(withDefaultImage(p.Template, o.DefaultImage))
		if err != nil {
			return o, fmt.Errorf("Options.Pool[%d]: %w", i, err)
		}
		p.Template = t
		if seen[keyOf(t)] {
			return o, invalid("Options.Pool[%d]: its template (%s %s %+v) is already pooled; give each template once, with the size you want", i, t.Driver, t.Image, t.Limits)
		}
		seen[keyOf(t)] = true
	}
	return o, nil
}
