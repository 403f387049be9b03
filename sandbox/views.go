package sandbox

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Values of Spec.Root.
const (
	// RootHost shows the host's root file system, read-only, with masks.
	RootHost = "host"
	// RootMinimal shows only the host's programs and libraries and an
	// allow-list of /etc: nothing of the host's data, homes, services'
	// state or configuration beyond what programs need to run.
	RootMinimal = "minimal"
)

// NoDNSResolvConf is the resolver configuration of a world whose driver
// writes one: no nameserver, so a lookup fails at once; names are
// resolved only by the egress proxy (HTTP_PROXY).
const NoDNSResolvConf = "# dsh: this world has no DNS; names are resolved only by the egress proxy (HTTP_PROXY).\noptions attempts:1 timeout:1\n"

// reservedTargets are where no Spec mount may go: the world's kernel
// interfaces (a bind over /proc or /sys would replace the world's own
// view of the kernel with a host one, a bind over /dev the host's
// devices) and /.dsh, where a driver keeps its init and egress socket.
var reservedTargets = []string{"/proc", "/dev", "/sys", "/.dsh"}

// checkViews checks what a Spec says of the world's view beside its
// mounts' form (CheckMounts): the root view and where mounts go.
func checkViews(s *Spec) error {
	switch s.Root {
	case "", RootHost, RootMinimal:
	default:
		return &SpecError{Field: "Root", Msg: fmt.Sprintf("%q is not a root view", s.Root), Fix: "use host or minimal"}
	}
	for i, m := range s.Mounts {
		if why := reservedTarget(m.Destination); why != "" {
			return &SpecError{Field: fmt.Sprintf("Mounts[%d]", i), Msg: why, Fix: "mount it elsewhere, such as /mnt/NAME"}
		}
	}
	return nil
}

// reservedTarget says why dst may not be a mount's destination, or "".
func reservedTarget(dst string) string {
	d := filepath.Clean(dst)
	if d == "/" {
		return "a mount on / would replace the world's whole root"
	}
	for _, t := range reservedTargets {
		if d == t || strings.HasPrefix(d, t+"/") {
			return fmt.Sprintf("destination %s is in %s, which belongs to the world's kernel interfaces or to dsh", d, t)
		}
	}
	return ""
}

// BindArg is a bind mount as a user writes it (dsh run -v, the
// configuration's sandbox.mounts): SRC:DST[:ro|rw].
type BindArg struct {
	Source, Destination string
	// Mode is "ro", "rw", or "" (the default: read-write for a source in
	// the workspace, read-only for any other).
	Mode string
}

// bindSyntax is the form of a BindArg, for errors.
const bindSyntax = "SRC:DST[:ro|rw] with absolute paths, such as /srv/ref:/ref:ro"

// ParseBindArg parses SRC:DST[:ro|rw]. It checks the form only; UserBind
// checks the paths on this host.
func ParseBindArg(s string) (BindArg, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return BindArg{}, fmt.Errorf("%q is not %s (paths with a colon are not supported)", s, bindSyntax)
	}
	b := BindArg{Source: parts[0], Destination: parts[1]}
	if len(parts) == 3 {
		b.Mode = parts[2]
		if b.Mode != "ro" && b.Mode != "rw" {
			return BindArg{}, fmt.Errorf("%q: mode %q is neither ro (read-only) nor rw (read-write); the form is %s", s, b.Mode, bindSyntax)
		}
	}
	for _, p := range []struct{ what, path string }{{"source", b.Source}, {"destination", b.Destination}} {
		if !filepath.IsAbs(p.path) {
			return BindArg{}, fmt.Errorf("%q: the %s %q is not an absolute path; the form is %s", s, p.what, p.path, bindSyntax)
		}
	}
	if why := reservedTarget(b.Destination); why != "" {
		return BindArg{}, fmt.Errorf("%q: %s; mount it elsewhere, such as /mnt/NAME", s, why)
	}
	return b, nil
}

// UserBind turns a user's SRC:DST[:ro|rw] into a Spec mount for a world
// on workspace (a real path, as Validate returns it, or one to resolve).
// The source must exist; it is bound by its real path, so the mount is
// the file checked. Without a mode, a source outside the workspace is
// read-only: making any other host file writable is asked for with :rw,
// and even then never for a system location or a home directory itself
// (what CheckWorkspace refuses as a workspace). The destination may not
// be the workspace, lie inside it or contain it: the workspace is the
// world's view of the same host directory at the same path.
func UserBind(arg, workspace string) (specs.Mount, error) {
	b, err := ParseBindArg(arg)
	if err != nil {
		return specs.Mount{}, err
	}
	src, err := filepath.EvalSymlinks(b.Source)
	if err != nil {
		return specs.Mount{}, fmt.Errorf("%q: the source %s cannot be bound: %v; create it or fix the path", arg, b.Source, err)
	}
	ws := filepath.Clean(workspace)
	if real, err := filepath.EvalSymlinks(ws); err == nil {
		ws = real
	}
	dst := filepath.Clean(b.Destination)
	for _, w := range []string{filepath.Clean(workspace), ws} {
		if IsWithin(dst, w) || IsWithin(w, dst) {
			return specs.Mount{}, fmt.Errorf("%q: the destination %s would cover the workspace %s or a part of it (the workspace is the same host directory at the same path inside); mount it outside the workspace, such as /mnt/NAME", arg, dst, w)
		}
	}
	mode := b.Mode
	inside := IsWithin(src, ws)
	if mode == "" {
		mode = "ro"
		if inside {
			mode = "rw"
		}
	}
	if mode == "rw" && !inside {
		if why := writableSourceRefused(src); why != "" {
			return specs.Mount{}, fmt.Errorf("%q: the source %s cannot be writable in a world: %s; bind it read-only (%s:%s:ro) or bind a project directory", arg, src, why, b.Source, b.Destination)
		}
	}
	return specs.Mount{Type: "bind", Source: src, Destination: dst, Options: []string{"rbind", mode}}, nil
}

// writableSourceRefused says why a world may not write host path real
// (symlinks resolved), or "": the rules of CheckWorkspace.
func writableSourceRefused(real string) string {
	if sys := systemLocation(real); sys != "" {
		return fmt.Sprintf("it is (in) the system location %s: %s", sys, systemWhy(sys))
	}
	if state := StateOverlap(real); state != "" {
		return fmt.Sprintf("it is, holds or lies in %s, dsh's own state: %s", state, StateWhy)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(real, &st); err == nil {
		if fs, ok := pseudoFS[int64(st.Type)]; ok {
			return fmt.Sprintf("it is on a %s file system: a world would write kernel settings", fs)
		}
	}
	if isHome(real) {
		return "it is a home directory: a world could rewrite every dotfile and credential in it"
	}
	return ""
}

// IsWithin reports whether path is dir or below it (both clean).
func IsWithin(path, dir string) bool {
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+"/")
}

// CheckMaskArg checks a mask as a user writes it (dsh run --mask, the
// configuration's sandbox.masks): an absolute path or ~/path, with no ..
// that would make it name something else than it says.
func CheckMaskArg(m string) error {
	if !strings.HasPrefix(m, "/") && !strings.HasPrefix(m, "~/") {
		return fmt.Errorf("%q is not an absolute path or ~/path (such as /srv/secrets or ~/.config/gh)", m)
	}
	for _, e := range strings.Split(m, "/") {
		if e == ".." {
			return fmt.Errorf("%q contains ..; give the path it means", m)
		}
	}
	return nil
}
