package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Workspaces configures the workspaces dsh serve --http hosts
// (docs/WORKSPACES.md).
type Workspaces struct {
	// Root is the state root: a directory per workspace (its state and
	// files). If empty, /var/lib/dsh/workspaces for root, else
	// $XDG_STATE_HOME/dsh/workspaces (~/.local/state/dsh/workspaces).
	Root string `mapstructure:"root"`
	// Max is the most workspaces at once.
	Max int `mapstructure:"max"`
	// TTL is the TTL of a create that gives none; MaxTTL the most a
	// create or an extend may ask for; IdleTimeout the idle timeout of a
	// create that gives none. Durations such as 1h or 30m.
	TTL         string `mapstructure:"ttl"`
	MaxTTL      string `mapstructure:"max_ttl"`
	IdleTimeout string `mapstructure:"idle_timeout"`
	// MaxFile is the largest file read or written through the API, in
	// bytes.
	MaxFile int64 `mapstructure:"max_file"`
	// Pool are the warm pools, each TEMPLATE:N (ParsePool).
	Pool []string `mapstructure:"pool"`
}

// DefaultWorkspaces are the defaults of the workspaces section.
func DefaultWorkspaces() Workspaces {
	return Workspaces{Max: 100, TTL: "1h", MaxTTL: "168h", IdleTimeout: "15m", MaxFile: 64 << 20, Pool: []string{}}
}

// PoolEntry is one warm pool: Size worlds of a template.
type PoolEntry struct {
	Driver, Image, Memory string
	Pids                  int
	CPUs                  float64
	Size                  int
}

// maxPool is the most worlds one pool entry keeps open.
const maxPool = 64

// ParsePool parses a pool entry: DRIVER[,image=IMG][,memory=SIZE]
// [,pids=N][,cpus=X]:N, such as native:4 or
// docker,image=dsh/base:latest,memory=256MiB:2. The template's limits
// left out are the server's (sandbox.limits), as a create's are.
func ParsePool(s string) (PoolEntry, error) {
	var p PoolEntry
	tmpl, n, ok := cutLast(s, ":")
	if !ok {
		return p, fmt.Errorf("pool entry %q has no :N; write TEMPLATE:N, such as native:4 or docker,image=dsh/base:latest,memory=256MiB:2", s)
	}
	size, err := strconv.Atoi(n)
	if err != nil || size < 1 || size > maxPool {
		return p, fmt.Errorf("pool entry %q: size %q is not a number from 1 to %d", s, n, maxPool)
	}
	p.Size = size
	parts := strings.Split(tmpl, ",")
	p.Driver = parts[0]
	if p.Driver == "" {
		return p, fmt.Errorf("pool entry %q names no driver; begin it with native or docker", s)
	}
	for _, kv := range parts[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || v == "" {
			return p, fmt.Errorf("pool entry %q: %q is not KEY=VALUE (image, memory, pids, cpus)", s, kv)
		}
		switch k {
		case "image":
			p.Image = v
		case "memory":
			if _, err := ParseSize(v); err != nil {
				return p, fmt.Errorf("pool entry %q: memory %q: %v", s, v, err)
			}
			p.Memory = v
		case "pids":
			if p.Pids, err = strconv.Atoi(v); err != nil || p.Pids < 1 {
				return p, fmt.Errorf("pool entry %q: pids %q is not a positive number", s, v)
			}
		case "cpus":
			if p.CPUs, err = strconv.ParseFloat(v, 64); err != nil || !(p.CPUs > 0) {
				return p, fmt.Errorf("pool entry %q: cpus %q is not a positive number such as 0.5", s, v)
			}
		default:
			return p, fmt.Errorf("pool entry %q: unknown key %q; the keys are image, memory, pids, cpus", s, k)
		}
	}
	return p, nil
}

func cutLast(s, sep string) (string, string, bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// validateWorkspaces checks the workspaces section.
func validateWorkspaces(w Workspaces, bad func(key, format string, args ...any)) {
	if w.Root != "" && !strings.HasPrefix(w.Root, "/") {
		bad("workspaces.root", "%q is not an absolute path (flag --workspace-root)", w.Root)
	}
	if w.Max < 0 {
		bad("workspaces.max", "%d is negative (flag --max-workspaces)", w.Max)
	}
	if w.MaxFile < 0 {
		bad("workspaces.max_file", "%d is negative (flag --max-file)", w.MaxFile)
	}
	durs := map[string]string{"workspaces.ttl": w.TTL, "workspaces.max_ttl": w.MaxTTL, "workspaces.idle_timeout": w.IdleTimeout}
	for key, v := range durs {
		if v == "" {
			continue
		}
		if d, err := time.ParseDuration(v); err != nil || d < 0 {
			bad(key, "%q is not a duration (use 30m, 1h, 168h)", v)
		}
	}
	if t, err1 := time.ParseDuration(w.TTL); err1 == nil {
		if m, err2 := time.ParseDuration(w.MaxTTL); err2 == nil && m > 0 && t > m {
			bad("workspaces.ttl", "%s is over workspaces.max_ttl %s; lower it or raise the maximum", w.TTL, w.MaxTTL)
		}
	}
	for i, p := range w.Pool {
		if _, err := ParsePool(p); err != nil {
			bad(fmt.Sprintf("workspaces.pool[%d]", i), "%v", err)
		}
	}
}
