package main

import (
	"fmt"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/spf13/cobra"

	"github.com/dsh-dev/dsh/internal/config"
	"github.com/dsh-dev/dsh/sandbox"
)

// addViewFlags registers the flags that shape what a world sees and who
// it is: extra mounts, masks, the root view and the user.
func addViewFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringArrayP("mount", "v", nil, "bind a host path into the world: SRC:DST[:ro|rw], absolute paths, such as -v /srv/ref:/ref or -v $PWD/../cache:/cache:rw (repeatable; read-only unless the source is in the workspace or :rw is given; never over the workspace, /proc, /dev or /sys)")
	f.StringArray("mask", nil, "hide a host path inside the world, such as --mask /srv/secrets or --mask '~/.config/gh' (repeatable; added to sandbox.masks and the built-in credential locations)")
	f.String("root", "", "the world's view of the host's root: host (read-only, masked) or minimal (only /usr, /bin, /sbin, /lib* and an allow-list of /etc, beside /tmp, /dev, /proc, the workspace and --mount; native driver only)")
	f.String("user", "", "run the world's processes as UID[:GID] (numbers; GID defaults to UID) instead of the workspace's owner; 0 is refused with the docker driver, whose uid 0 is the host's root")
	bindConfigFlag(cmd, "root", "sandbox.root")
}

// viewOverrides are the view flags of one command line beyond the
// configuration keys they set (--root sets sandbox.root).
type viewOverrides struct {
	Mounts []string // -v/--mount, after sandbox.mounts
	Masks  []string // --mask, after sandbox.masks
	User   string   // --user, "" for the driver's choice
}

// viewFlags reads the view flags of cmd (addViewFlags).
func viewFlags(cmd *cobra.Command) viewOverrides {
	var v viewOverrides
	f := cmd.Flags()
	v.Mounts, _ = f.GetStringArray("mount")
	v.Masks, _ = f.GetStringArray("mask")
	v.User, _ = f.GetString("user")
	return v
}

// applyViews adds to spec what the configuration (sb) and the view flags
// say of the world's view and identity, for driver d. Every error names
// the flag or key and its value.
func applyViews(spec *sandbox.Spec, sb config.Sandbox, v viewOverrides, d driver) error {
	if !d.confines {
		for _, f := range []struct {
			name string
			set  bool
		}{{"--mount", len(v.Mounts) > 0}, {"--mask", len(v.Masks) > 0}, {"--user", v.User != ""}} {
			if f.set {
				return fmt.Errorf("%s: the %s driver confines nothing, so there is no view to change (the command sees this whole host as you); drop %s, or choose --driver %s or %s", f.name, d.name, f.name, driverNative, driverDocker)
			}
		}
	}
	add := func(what, arg string) error {
		m, err := sandbox.UserBind(arg, spec.Workspace)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		spec.Mounts = append(spec.Mounts, m)
		return nil
	}
	for i, arg := range sb.Mounts {
		if err := add(fmt.Sprintf("sandbox.mounts[%d]", i), arg); err != nil {
			return err
		}
	}
	for _, arg := range v.Mounts {
		if err := add("--mount", arg); err != nil {
			return err
		}
	}
	for _, m := range v.Masks {
		if err := sandbox.CheckMaskArg(m); err != nil {
			return fmt.Errorf("--mask: %w", err)
		}
		spec.Masks = append(spec.Masks, m)
	}
	switch sb.Root {
	case "", sandbox.RootHost:
	case sandbox.RootMinimal:
		switch {
		case d.usesImage:
			return fmt.Errorf("--root minimal / sandbox.root minimal: the %s driver does not show the host's root at all: its root is the image (--image), already the world's own; drop --root, or pass --driver %s for a minimal view of this host", d.name, driverNative)
		case d.name != driverNative:
			return fmt.Errorf("--root minimal / sandbox.root minimal: the %s driver confines nothing, so the command sees this whole host; drop --root, or pass --driver %s for a minimal view of this host", d.name, driverNative)
		}
		spec.Root = sandbox.RootMinimal
	default:
		return fmt.Errorf("--root %q / sandbox.root: not a root view; use %s or %s", sb.Root, sandbox.RootHost, sandbox.RootMinimal)
	}
	if v.User != "" {
		u, err := parseUser(v.User)
		if err != nil {
			return err
		}
		if d.name == driverDocker && (u.UID == 0 || u.GID == 0) {
			return fmt.Errorf("--user %s: a docker world has no user namespace, so id 0 there is the host's root (it would own every root-owned file in the workspace and the mounts); use the default (the workspace's owner) or another id", v.User)
		}
		spec.User = u
	}
	return nil
}

// parseUser parses --user UID[:GID].
func parseUser(s string) (*specs.User, error) {
	us, gs, hasGID := strings.Cut(s, ":")
	bad := func(what, v string) error {
		return fmt.Errorf("--user %q: the %s %q is not a number from 0 to 4294967294; give UID or UID:GID, such as --user 1000:1000", s, what, v)
	}
	id := func(what, v string) (uint32, error) {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil || n == 1<<32-1 {
			return 0, bad(what, v)
		}
		return uint32(n), nil
	}
	uid, err := id("uid", us)
	if err != nil {
		return nil, err
	}
	gid := uid
	if hasGID {
		if gid, err = id("gid", gs); err != nil {
			return nil, err
		}
	}
	return &specs.User{UID: uid, GID: gid}, nil
}
