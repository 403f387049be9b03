package conformance

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/netpolicy"
	"github.com/dsh-dev/dsh/sandbox"
)

// unixListener accepts on a unix socket and writes token to every
// connection; it counts them.
type unixListener struct {
	l     net.Listener
	conns atomic.Int64
}

func listenUnix(path, token string) (*unixListener, error) {
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(path, "@") {
		// Anyone may connect: only the world's confinement may stop it.
		if err := os.Chmod(path, 0o777); err != nil {
			l.Close()
			return nil, err
		}
	}
	u := &unixListener{l: l}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			u.conns.Add(1)
			c.Write([]byte(token))
			c.Close()
		}
	}()
	return u, nil
}

// No host unix socket answers a world, wherever it is: in the workspace,
// in a directory of the host's, in /run, made after the world started, or
// abstract. Sockets a world makes for itself work where the Spec allows
// unix sockets.
func checkHostUnixSockets(ctx context.Context, s *suite) error {
	w, err := s.mainWorld(ctx)
	if err != nil {
		return err
	}
	token := "DSH-HOST-UNIX-" + randHex(4)
	// Made now, after the world started.
	paths := []string{
		filepath.Join(w.ws, "host.sock"),
		filepath.Join(s.base, "host.sock"),
		"@dsh-conformance-" + randHex(4),
	}
	// Where services keep their sockets: /run (root only) and /dev/shm.
	for _, d := range []string{"/run", "/dev/shm"} {
		dir := filepath.Join(d, "dsh-conformance-"+randHex(4))
		if err := os.Mkdir(dir, 0o755); err != nil {
			if errors.Is(err, fs.ErrPermission) {
				continue
			}
			return err
		}
		defer os.RemoveAll(dir)
		paths = append(paths, filepath.Join(dir, "host.sock"))
	}
	var ls []*unixListener
	defer func() {
		for _, l := range ls {
			l.l.Close()
		}
	}()
	for _, p := range paths {
		l, err := listenUnix(p, token)
		if err != nil {
			return fmt.Errorf("listening on %s: %w", p, err)
		}
		ls = append(ls, l)
	}
	out, err := w.probeRun(ctx, append([]string{"unixdial"}, paths...)...)
	if err != nil {
		return err
	}
	s.logf("dialled host unix sockets: %s", strings.Join(out, "; "))
	var problems []string
	problems = append(problems, withPrefix(out, "connected")...)
	for i, l := range ls {
		if n := l.conns.Load(); n > 0 {
			problems = append(problems, fmt.Sprintf("%d connections reached %s", n, paths[i]))
		}
	}
	if n := len(withPrefix(out, "refused")) + len(withPrefix(out, "connected")); n != len(paths) {
		return fmt.Errorf("probe tried %d of %d sockets: %v", n, len(paths), out)
	}
	if len(problems) > 0 {
		return fmt.Errorf("host unix sockets answer inside the world: %s", strings.Join(problems, "; "))
	}

	// The documented opt-out: a world whose Spec allows unix sockets can
	// use its own.
	own, err := s.open(ctx, func(sp *sandbox.Spec) { sp.UnixSockets = true })
	if err != nil {
		return err
	}
	defer own.w.Close()
	out, err = own.probeRun(ctx, "unixself", "/tmp/dsh-own.sock")
	if err != nil {
		return err
	}
	if len(out) != 1 || out[0] != `works "self\n" <nil>` {
		return fmt.Errorf("with Spec.UnixSockets, a world's own unix socket does not work: %v", out)
	}
	return nil
}

// A world cannot reach another world's egress proxy (whose policy is
// wider than its own), nor any unix socket in its view: the probe walks
// the world's file system for sockets and connects to each.
func checkOtherWorldsProxy(ctx context.Context, s *suite) error {
	wide, err := netpolicy.New(netpolicy.Config{Default: "deny", Allow: []string{hostPort(s.denied.URL), hostPort(s.allowed.URL)}})
	if err != nil {
		return err
	}
	other, err := s.openWith(ctx, nil, func(o *execworld.Options) { o.Egress = wide })
	if err != nil {
		return err
	}
	defer other.w.Close()
	w, err := s.mainWorld(ctx)
	if err != nil {
		return err
	}
	// Where sockets usually are first, then everything else in view.
	out, err := w.probeRun(ctx, "sockscan", "/run", "/var/run", "/tmp", "/var/tmp", "/dev", w.ws, s.base, "/")
	if err != nil {
		return err
	}
	if len(withPrefix(out, "scanned")) != 1 {
		return fmt.Errorf("the socket scan did not finish: %v", out)
	}
	s.logf("socket scan: %s", strings.Join(out, "; "))
	if c := withPrefix(out, "connected"); len(c) > 0 {
		return fmt.Errorf("unix sockets answer inside the world (another world's proxy among them?): %s", strings.Join(c, "; "))
	}
	return nil
}

// A world can make exactly the sockets it needs: inet, inet6 and route
// netlink, and connection-oriented unix socket pairs; every other family,
// protocol and pair type, and io_uring, are refused.
func checkSocketFamilies(ctx context.Context, s *suite) error {
	w, err := s.mainWorld(ctx)
	if err != nil {
		return err
	}
	out, err := w.probeRun(ctx, "families")
	if err != nil {
		return err
	}
	want := map[string]bool{"inet": true, "inet6": true, "netlink-route": true,
		"socketpair-stream": true, "socketpair-seqpacket": true}
	var problems []string
	seen := 0
	for _, l := range out {
		f := strings.Fields(l)
		if len(f) < 2 || (f[0] != "allowed" && f[0] != "denied") {
			continue
		}
		seen++
		if allowed := f[0] == "allowed"; allowed != want[f[1]] {
			problems = append(problems, l)
		}
	}
	if seen == 0 {
		return fmt.Errorf("socket families: %w: %v", errNoDenial, out)
	}
	if len(problems) > 0 {
		return fmt.Errorf("socket families not as allowed (want only %v): %s", slices.Sorted(maps.Keys(want)), strings.Join(problems, "; "))
	}
	return nil
}
