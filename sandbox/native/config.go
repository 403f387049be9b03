package native

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/dsh-dev/dsh/sandbox"
)

// rootMasks are hidden in addition to Spec.Masks when dsh runs as root.
// Its worlds never hold host uid 0 (idmap.go), so permissions already
// protect root-only files; the list is a second layer. /home holds other
// users' files, which the home masks (the caller's homes) do not cover; a
// workspace below it stays reachable.
var rootMasks = []string{
	"/home",
	"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-",
	"/etc/sudoers", "/etc/sudoers.d", "/etc/ssl/private",
	"/etc/ssh/ssh_host_rsa_key", "/etc/ssh/ssh_host_ecdsa_key",
	"/etc/ssh/ssh_host_ed25519_key", "/etc/ssh/ssh_host_dsa_key",
	"/var/lib/containerd", "/run/containerd", "/var/run/containerd",
}

// kernelMasks hide kernel interfaces of the host's read-only /sys that
// no tool needs: firmware tables, debug and tracing file systems, LSM
// policy, pinned BPF objects.
var kernelMasks = []string{
	"/sys/firmware", "/sys/kernel/debug", "/sys/kernel/tracing",
	"/sys/kernel/security", "/sys/fs/bpf",
}

// checkSpec rejects Spec fields the driver cannot honour, after the
// checks of every driver (sandbox.Validate), and returns the workspace's
// real path. The native driver only confines more than a Spec asks for
// when the Spec asks for the hardened defaults; anything that asks for
// less is an error rather than silently ignored.
func checkSpec(s *sandbox.Spec) (workspace string, err error) {
	ws, err := sandbox.Validate(s)
	if err != nil {
		return "", invalid(err)
	}
	if !s.ReadonlyRoot {
		return "", &specError{Field: "ReadonlyRoot", Msg: "the native driver always mounts the host root read-only; set it to true"}
	}
	if !s.NoNewPrivileges {
		return "", &specError{Field: "NoNewPrivileges", Msg: "the native driver always sets no_new_privs; set it to true"}
	}
	if c := s.Capabilities; c != nil && len(c.Bounding)+len(c.Effective)+len(c.Permitted)+len(c.Inheritable)+len(c.Ambient) > 0 {
		return "", &specError{Field: "Capabilities", Msg: "the native driver drops every capability; leave the sets empty"}
	}
	if s.Seccomp != nil {
		return "", &specError{Field: "Seccomp", Msg: "custom seccomp profiles are not supported by the native driver; leave it nil for the built-in filter"}
	}
	return ws, nil
}

// identity returns the uid, gid and groups processes run as, inside the
// world. An unprivileged caller's world runs as the caller. A root
// caller's world (mapped to an unprivileged host range, idmap.go) runs
// as the Spec's User, else as the workspace's owner.
func identity(s *sandbox.Spec, mapped bool, ws string) (uid, gid uint32, groups []uint32, err error) {
	uid, gid = uint32(os.Getuid()), uint32(os.Getgid())
	if s.User == nil {
		if mapped {
			uid, gid, err = workspaceOwner(ws)
		}
		return uid, gid, nil, err
	}
	u := s.User
	if !mapped && (u.UID != uid || u.GID != gid || len(u.AdditionalGids) > 0) {
		return 0, 0, nil, &specError{Field: "User", Msg: fmt.Sprintf("uid %d gid %d: an unprivileged caller can only map its own identity (uid %d gid %d); leave User nil or run dsh as root", u.UID, u.GID, uid, gid)}
	}
	if u.UID >= idRangeSize || u.GID >= idRangeSize {
		return 0, 0, nil, &specError{Field: "User", Msg: fmt.Sprintf("uid %d gid %d: ids above 65535 are not mapped", u.UID, u.GID)}
	}
	return u.UID, u.GID, u.AdditionalGids, nil
}

// expandMasks turns Spec.Masks into real host paths: "~" is the invoking
// user's home (and, under sudo, the home of the user who ran sudo),
// symlinks are resolved so a mount can never follow one, and paths that
// do not exist are skipped. A root caller's worlds get rootMasks too.
func expandMasks(masks []string, root bool) []string {
	homes := homeDirs()
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		real, err := filepath.EvalSymlinks(p)
		if err != nil || seen[real] || real == "/" {
			return
		}
		seen[real] = true
		out = append(out, real)
	}
	list := append(append([]string(nil), masks...), kernelMasks...)
	if root {
		list = append(list, rootMasks...)
	}
	for _, m := range list {
		switch {
		case m == "~" || strings.HasPrefix(m, "~/"):
			for _, h := range homes {
				add(filepath.Join(h, strings.TrimPrefix(m, "~")))
			}
		case filepath.IsAbs(m):
			add(filepath.Clean(m))
		}
	}
	return out
}

// homeDirs returns the invoking user's homes ($HOME, the password
// database's, and under sudo the one of the user who ran it), each once:
// $HOME is most often the database's, and each home costs expandMasks a
// resolution of every "~" mask.
func homeDirs() []string {
	var homes []string
	add := func(h string) {
		if h != "" && !slices.Contains(homes, h) {
			homes = append(homes, h)
		}
	}
	if h, err := os.UserHomeDir(); err == nil && filepath.IsAbs(h) {
		add(h)
	}
	if u, err := user.LookupId(strconv.Itoa(os.Getuid())); err == nil {
		add(u.HomeDir)
	}
	if id := os.Getenv("SUDO_UID"); id != "" && os.Getuid() == 0 {
		if u, err := user.LookupId(id); err == nil {
			add(u.HomeDir)
		}
	}
	return homes
}
