package sandbox

import (
	"fmt"
	"path/filepath"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// MountOptions are a Spec mount's options, parsed: the flags every driver
// must honour, and the file system's data options (mode=, size=, …).
type MountOptions struct {
	ReadOnly, NoSuid, NoDev, NoExec bool
	// Data are the KEY=VALUE options, in order (tmpfs: mode, size,
	// nr_inodes, uid, gid).
	Data []string
}

// mountFlagOptions are the OCI options that set a flag, and those that
// say what is the default anyway.
var mountFlagOptions = map[string]func(*MountOptions){
	"ro":     func(o *MountOptions) { o.ReadOnly = true },
	"nosuid": func(o *MountOptions) { o.NoSuid = true },
	"nodev":  func(o *MountOptions) { o.NoDev = true },
	"noexec": func(o *MountOptions) { o.NoExec = true },
	// Defaults: writable, a recursive private bind.
	"rw": nil, "bind": nil, "rbind": nil, "private": nil, "rprivate": nil,
}

// mountDataOptions are the data options a tmpfs takes.
var mountDataOptions = []string{"mode=", "size=", "nr_inodes=", "uid=", "gid="}

// ParseMountOptions parses a mount's options; an option no driver knows
// is an error naming it.
func ParseMountOptions(opts []string) (MountOptions, error) {
	var m MountOptions
	for _, o := range opts {
		if set, ok := mountFlagOptions[o]; ok {
			if set != nil {
				set(&m)
			}
			continue
		}
		known := false
		for _, p := range mountDataOptions {
			known = known || strings.HasPrefix(o, p)
		}
		if !known {
			return MountOptions{}, fmt.Errorf("option %q is not supported (ro, rw, nosuid, nodev, noexec, bind, rbind, private, rprivate, and for tmpfs %s…)", o, strings.Join(mountDataOptions, ", "))
		}
		m.Data = append(m.Data, o)
	}
	return m, nil
}

// Flags returns the options as mount(2) flags.
func (m MountOptions) Flags() uintptr {
	var f uintptr
	for _, b := range []struct {
		set  bool
		flag uintptr
	}{{m.ReadOnly, unix.MS_RDONLY}, {m.NoSuid, unix.MS_NOSUID}, {m.NoDev, unix.MS_NODEV}, {m.NoExec, unix.MS_NOEXEC}} {
		if b.set {
			f |= b.flag
		}
	}
	return f
}

// IsBind reports whether m is a bind mount (type bind, rbind, or none).
func IsBind(m specs.Mount) bool { return m.Type == "bind" || m.Type == "rbind" || m.Type == "" }

// CheckMounts checks what every driver requires of a Spec's mounts: an
// absolute destination, a tmpfs or a bind of an absolute host path,
// options that ParseMountOptions knows, and no writable bind of dsh's
// own state (StateOverlap).
func CheckMounts(mounts []specs.Mount) error {
	for i, m := range mounts {
		field := fmt.Sprintf("Mounts[%d]", i)
		if !filepath.IsAbs(m.Destination) {
			return &SpecError{Field: field, Msg: fmt.Sprintf("destination %q is not absolute", m.Destination), Fix: "give the path inside the world as an absolute path"}
		}
		switch {
		case m.Type == "tmpfs":
		case IsBind(m):
			if !filepath.IsAbs(m.Source) {
				return &SpecError{Field: field, Msg: fmt.Sprintf("bind source %q for %s is not absolute", m.Source, m.Destination), Fix: "give the host path as an absolute path"}
			}
		default:
			return &SpecError{Field: field, Msg: fmt.Sprintf("mount type %q at %s is not supported", m.Type, m.Destination), Fix: "use tmpfs or bind"}
		}
		o, err := ParseMountOptions(m.Options)
		if err != nil {
			return &SpecError{Field: field + ".Options", Msg: fmt.Sprintf("%s: %v", m.Destination, err), Fix: "remove it"}
		}
		if IsBind(m) && !o.ReadOnly {
			if state := StateOverlap(m.Source); state != "" {
				return &SpecError{Field: field, Msg: fmt.Sprintf("the writable bind source %s is, holds or lies in %s, dsh's own state: %s", m.Source, state, StateWhy), Fix: "bind it read-only, or bind a directory that does not overlap it"}
			}
		}
	}
	return nil
}
