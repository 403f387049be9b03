package native

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/dsh-dev/dsh/sandbox"
	"github.com/dsh-dev/dsh/sandbox/native/nsinit"
)

// A minimal root (Spec.Root minimal) shows the host's programs and
// libraries and the few files of /etc they need to run, and nothing else
// of the host: no /home, /root, /var, /srv, /opt, /run, /sys or /boot,
// no configuration of the host's services, no host identity
// (machine-id). The world's own /tmp, /dev, /proc, its workspace and the
// Spec's mounts are added as for the host's root.

// systemTops are the top-level directories of programs and libraries;
// lib* (lib, lib32, lib64, libx32) are found by name. A merged-/usr
// host has them as symlinks into /usr, and so does the view.
var systemTops = []string{"/usr", "/bin", "/sbin"}

// etcAllow are the /etc entries a minimal root shows, read-only, each
// for the programs that read it:
//   - nsswitch.conf: how the C library looks up users, groups and hosts;
//   - ld.so.cache, ld.so.conf, ld.so.conf.d: where the dynamic loader
//     finds libraries (never ld.so.preload, which would load a host
//     library into every program);
//   - ssl/certs, ca-certificates, ca-certificates.conf, pki: the CA
//     certificates TLS clients verify servers with (through the egress
//     proxy, TLS is end to end);
//   - localtime, timezone: the local time zone;
//   - os-release, lsb-release, debian_version: which distribution the
//     programs are from (build tools ask);
//   - alternatives: Debian's choices of programs, which /usr/bin links
//     through (/usr/bin/java -> /etc/alternatives/java);
//   - protocols, services: protocol and port names (getaddrinfo,
//     getservbyname).
//
// passwd, group, hosts, hostname and resolv.conf are written instead
// (etcFiles), and /etc/mtab is the world's own mount table.
var etcAllow = []string{
	"nsswitch.conf", "ld.so.cache", "ld.so.conf", "ld.so.conf.d",
	"ssl/certs", "ca-certificates", "ca-certificates.conf", "pki",
	"localtime", "timezone", "os-release", "lsb-release", "debian_version",
	"alternatives", "protocols", "services",
}

// minimalRoot returns the minimal root a world of uid, gid and groups
// sees, named hostname: what of this host exists of systemTops, lib*
// and etcAllow (symlinks as symlinks, the rest bound read-only), and the
// files written for it.
func minimalRoot(uid, gid uint32, groups []uint32, hostname string) *nsinit.RootView {
	v := &nsinit.RootView{Dirs: []string{"/etc", "/tmp", "/proc", "/dev"}}
	add := func(p string) {
		fi, err := os.Lstat(p)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if t, err := os.Readlink(p); err == nil {
				v.Links = append(v.Links, nsinit.Link{Path: p, Target: t})
			}
		case fi.IsDir() || fi.Mode().IsRegular():
			v.Binds = append(v.Binds, p)
		}
	}
	tops := slices.Clone(systemTops)
	if entries, err := os.ReadDir("/"); err == nil {
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "lib") {
				tops = append(tops, "/"+e.Name())
			}
		}
	}
	for _, p := range tops {
		add(p)
	}
	for _, e := range etcAllow {
		add(filepath.Join("/etc", e))
	}
	if hostname == "" {
		hostname = "dsh"
	}
	v.Links = append(v.Links, nsinit.Link{Path: "/etc/mtab", Target: "../proc/self/mounts"})
	v.Files = append(v.Files,
		nsinit.File{Path: "/etc/passwd", Data: idFile("/etc/passwd", 2, []uint32{0, uid, nobodyID},
			fmt.Sprintf("world:x:%d:%d:dsh world:/tmp:/bin/sh\n", uid, gid))},
		nsinit.File{Path: "/etc/group", Data: idFile("/etc/group", 2, append([]uint32{0, gid, nobodyID}, groups...),
			fmt.Sprintf("world:x:%d:\n", gid))},
		nsinit.File{Path: "/etc/hosts", Data: "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\t" + hostname + "\n"},
		nsinit.File{Path: "/etc/hostname", Data: hostname + "\n"},
		nsinit.File{Path: "/etc/resolv.conf", Data: sandbox.NoDNSResolvConf},
	)
	return v
}

// nobodyID is the overflow id, which files of unmapped owners show as.
const nobodyID = 65534

// idFile returns the lines of the host's passwd or group file (path)
// whose id (field index field) is one of ids, with no password hash;
// missing, the world's own id gets fallback (the first of ids after 0
// that has no line).
func idFile(path string, field int, ids []uint32, fallback string) string {
	var b strings.Builder
	seen := map[uint32]bool{}
	if f, err := os.Open(path); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			parts := strings.Split(sc.Text(), ":")
			if len(parts) <= field {
				continue
			}
			n, err := strconv.ParseUint(parts[field], 10, 32)
			if err != nil || !slices.Contains(ids, uint32(n)) || seen[uint32(n)] {
				continue
			}
			seen[uint32(n)] = true
			parts[1] = "x"
			b.WriteString(strings.Join(parts, ":") + "\n")
		}
	}
	if len(ids) > 1 && !seen[ids[1]] {
		b.WriteString(fallback)
	}
	return b.String()
}

// applyRoot makes cfg show the root spec asks for: with Spec.Root
// minimal, the minimal root, and no host home (the home locations a
// host root would show are the host's files too).
func applyRoot(cfg *nsinit.Config, spec *sandbox.Spec) {
	if spec.Root != sandbox.RootMinimal {
		return
	}
	cfg.RootView = minimalRoot(cfg.UID, cfg.GID, cfg.Groups, spec.Hostname)
	cfg.Allow = nil
}
