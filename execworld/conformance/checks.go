package conformance

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/netpolicy/proxy"
	"github.com/dsh-dev/dsh/sandbox"
)

// checks is the suite, in the order Run runs it.
var checks = []check{
	{"WorkspaceSamePath", false, checkWorkspace},
	{"WritesOutsideWorkspaceAndTmpFail", true, checkWrites},
	{"SecretLocationsUnreadable", true, checkSecrets},
	{"HostEnvironmentAbsent", false, checkEnv},
	{"HostProcessesInvisibleAndUnsignalable", true, checkHostProcesses},
	{"NoCapabilitiesAndNoNewPrivs", true, checkCaps},
	{"MountUnsharePtraceFail", true, checkSyscalls},
	{"DockerSocketAbsent", true, checkDockerSocket},
	{"DirectTCPFails", true, checkDirectTCP},
	{"NameResolutionFails", true, checkResolution},
	{"EgressOnlyThroughProxyUnderPolicy", false, checkEgress},
	{"PidsLimitStopsForkBomb", true, checkPids},
	{"MemoryBombOOMKilledInside", true, checkMemory},
	{"TimeoutLeavesNoProcess", false, checkTimeout},
	{"OutputTailsExact", false, checkTails},
	{"ExitCodesPropagate", false, checkExitCodes},
	{"TerminalWhenAsked", false, checkTerminal},
	{"DeniedNamesNeverResolved", false, checkDeniedNamesNeverResolved},
	{"SystemWorkspacesRefused", false, checkSystemWorkspaces},
	{"BadLimitsRefused", false, checkBadLimits},
	{"NoHostControllingTerminal", true, checkNoHostTerminal},
	{"HostUnixSocketsUnreachable", true, checkHostUnixSockets},
	{"OtherWorldsProxyUnreachable", true, checkOtherWorldsProxy},
	{"SocketFamiliesLimited", true, checkSocketFamilies},
	{"DeviceNodesReadOnly", true, checkDeviceNodesReadOnly},
	{"RootOnlyFilesUnreadable", true, checkRootOnlyFiles},
	{"HomeCredentialsHidden", true, checkHomeCredentials},
	{"InitSurvivesSignalsAndOOM", true, checkInit},
	{"WorldLoopbackStaysInside", false, checkWorldLoopbackInside},
	{"HostLoopbackOnlyByNameWhenAllowed", false, checkHostLoopbackByName},
	{"CommandProxyEnvFollowsTheRule", false, checkCommandProxyEnv},
	{"LongLivedServerConn", false, checkLongLivedServer},
	{"BindMountOptionsHonoured", true, checkBindMountOptions},
	{"WorkspaceOwnerKept", false, checkWorkspaceOwnerKept},
	{"MinimalRootShowsNoHostFiles", true, checkMinimalRoot},
	{"WritesBoundedByBudget", true, checkWriteBudget},
	{"TmpfsFullBeforeMemory", true, checkTmpfsFullBeforeMemory},
	{"ProtectedPathsReadOnly", true, checkProtectedPaths},
	{"NoPrivilegeBitsLeaveAWorld", true, checkNoPrivilegeBits},
	{"WorkspaceReadOnlyRefusesWrites", true, checkWorkspaceReadOnly},
	{"WorkspaceOverlayReportsExactChangeSet", true, checkWorkspaceOverlay},
	{"WorkspaceOverlayBounded", true, checkWorkspaceOverlayBounded},
	{"NoSocketInherited", false, checkNoSocketInherited},
	{"PauseFreezesEveryProcess", false, checkPause},
}

// The workspace is mounted read-write at the same path.
func checkWorkspace(ctx context.Context, s *suite) error {
	w, err := s.mainWorld(ctx)
	if err != nil {
		return err
	}
	os.WriteFile(filepath.Join(w.ws, "from-host"), []byte("host wrote this\n"), 0o644)
	res, err := w.run(ctx, &execworld.Cmd{Argv: []string{"/bin/sh", "-c", `pwd; cat from-host; echo "world wrote this" > from-world`}})
	if err != nil {
		return err
	}
	if want := w.ws + "\nhost wrote this\n"; res.Stdout.String() != want || res.ExitCode() != 0 {
		return fmt.Errorf("in the workspace: exit %d, stdout %q, stderr %q; want %q", res.ExitCode(), res.Stdout.Data, res.Stderr.Data, want)
	}
	b, err := os.ReadFile(filepath.Join(w.ws, "from-world"))
	if err != nil || string(b) != "world wrote this\n" {
		return fmt.Errorf("a file the world wrote reads %q, %v on the host", b, err)
	}
	return nil
}

func checkWrites(ctx context.Context, s *suite) error {
	w, err := s.mainWorld(ctx)
	if err != nil {
		return err
	}
	mustFail := []string{"/", "/etc", "/usr", "/usr/bin", "/bin", "/var", "/var/tmp", "/opt", "/root", "/home",
		s.base, s.fakeHome}
	if p := filepath.Dir(s.base); !slices.Contains(mustFail, p) {
		mustFail = append(mustFail, p)
	}
	mustWork := []string{w.ws, "/tmp"}
	out, err := w.probeRun(ctx, append(append([]string{"write"}, mustWork...), mustFail...)...)
	if err != nil {
		return err
	}
	var problems []string
	for _, d := range mustWork {
		if len(withPrefix(out, "wrote "+d)) == 0 {
			problems = append(problems, d+" is not writable (it must be)")
		}
	}
	for _, d := range mustFail {
		if len(withPrefix(out, "wrote "+d)) > 0 {
			problems = append(problems, "wrote into "+d)
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("writes: %s\nprobe said:\n%s", strings.Join(problems, "; "), strings.Join(out, "\n"))
	}
	return nil
}

func checkSecrets(ctx context.Context, s *suite) error {
	w, err := s.mainWorld(ctx)
	if err != nil {
		return err
	}
	paths := []string{s.secretDir, filepath.Join(s.fakeHome, ".ssh"), filepath.Join(s.fakeHome, ".aws"), filepath.Join(s.fakeHome, ".docker")}
	for _, m := range sandbox.DefaultMasks {
		if strings.HasPrefix(m, "/") {
			paths = append(paths, m)
		}
	}
	out, err := w.probeRun(ctx, append([]string{"secrets"}, paths...)...)
	if err != nil {
		return err
	}
	if readable := withPrefix(out, "readable"); len(readable) > 0 {
		return fmt.Errorf("masked locations are readable inside:\n%s", strings.Join(readable, "\n"))
	}
	if len(withPrefix(out, "done")) != 1 {
		return fmt.Errorf("probe did not finish: %q", out)
	}
	// A shell reading them directly gets nothing either.
	res, err := w.run(ctx, &execworld.Cmd{Argv: []string{"/bin/sh", "-c",
		"cat " + filepath.Join(s.fakeHome, ".ssh", "id_ed25519") + " " + filepath.Join(s.secretDir, "token") + " 2>&1; exit 0"}})
	if err != nil {
		return err
	}
	if strings.Contains(res.Stdout.String(), s.secretToken) {
		return fmt.Errorf("cat printed a masked secret: %q", res.Stdout.Data)
	}
	return nil
}

// The host environment never enters; explicit entries do.
func checkEnv(ctx context.Context, s *suite) error {
	w, err := s.mainWorld(ctx)
	if err != nil {
		return err
	}
	res, err := w.run(ctx, &execworld.Cmd{Argv: []string{"/bin/sh", "-c", "env"}, Env: []string{"DSH_CONFORMANCE_EXPLICIT=yes"}})
	if err != nil {
		return err
	}
	env := res.Stdout.String()
	if strings.Contains(env, s.secretToken) || strings.Contains(env, "DSH_CONFORMANCE_HOST_ONLY") {
		return fmt.Errorf("the host environment entered the world:\n%s", env)
	}
	if !strings.Contains(env, "DSH_CONFORMANCE_EXPLICIT=yes") {
		return fmt.Errorf("an explicit environment entry is missing:\n%s", env)
	}
	// Tools keep caches under $HOME: it must be a writable directory of
	// the world's own, never the host user's home.
	res, err = w.run(ctx, &execworld.Cmd{Argv: []string{"/bin/sh", "-c", `test -n "$HOME" && touch "$HOME/.dsh-conformance" && echo "$HOME"`}})
	if err != nil {
		return err
	}
	home := strings.TrimSpace(res.Stdout.String())
	if res.ExitCode() != 0 || home == "" {
		return fmt.Errorf("HOME is unset or not writable inside the world (status %d, stderr %q)", res.ExitCode(), res.Stderr.String())
	}
	if home == s.fakeHome {
		return fmt.Errorf("HOME inside the world is the host's home %s", home)
	}
	return nil
}

func checkHostProcesses(ctx context.Context, s *suite) error {
	w, err := s.mainWorld(ctx)
	if err != nil {
		return err
	}
	marker := "dsh-conformance-host-" + randHex(4)
	// A host process whose command line carries the marker.
	host := exec.Command("/bin/sh", "-c", "sleep 600; : "+marker)
	host.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := host.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { host.Wait(); close(exited) }()
	defer func() { syscall.Kill(-host.Process.Pid, syscall.SIGKILL); <-exited }()
	pid := host.Process.Pid

	out, err := w.probeRun(ctx, "procs", marker)
	if err != nil {
		return err
	}
	if found := withPrefix(out, "found"); len(found) > 0 {
		return fmt.Errorf("a host process is visible inside: %s", strings.Join(found, "; "))
	}
	if _, err := w.probeRun(ctx, "kill", strconv.Itoa(pid)); err != nil {
		return err
	}
	// SIGKILL from inside would be delivered before kill(2) returned; give
	// the reaper a moment to notice before concluding it survived.
	select {
	case <-exited:
		return fmt.Errorf("a process inside the world killed host process %d", pid)
	case <-time.After(500 * time.Millisecond):
	}
	return nil
}

func checkCaps(ctx context.Context, s *suite) error {
	w, err := s.mainWorld(ctx)
	if err != nil {
		return err
	}
	out, err := w.probeRun(ctx, "status")
	if err != nil {
		return err
	}
	want := map[string]string{
		"CapEff:": "0000000000000000", "CapPrm:": "0000000000000000",
		"CapAmb:": "0000000000000000", "NoNewPrivs:": "1",
	}
	var problems []string
	for k, v := range want {
		got := ""
		for _, l := range out {
			if f := strings.Fields(l); len(f) == 2 && f[0] == k {
				got = f[1]
			}
		}
		if got != v {
			problems = append(problems, fmt.Sprintf("%s %s (want %s)", k, got, v))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("process status inside: %s", strings.Join(problems, ", "))
	}
	return nil
}

func checkSyscalls(ctx context.Context, s *suite) error {
	w, err := s.mainWorld(ctx)
	if err != nil {
		return err
	}
	var problems []string
	for _, probe := range []string{"mount", "unshare", "ptrace"} {
		out, err := w.probeRun(ctx, probe)
		if err != nil {
			return err
		}
		if allowed := withPrefix(out, "allowed"); len(allowed) > 0 {
			problems = append(problems, probe+": "+strings.Join(allowed, ", "))
		}
		if len(withPrefix(out, "denied")) == 0 && len(withPrefix(out, "allowed")) == 0 {
			problems = append(problems, fmt.Sprintf("%s: %v: %v", probe, errNoDenial, out))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("privileged operations succeeded inside: %s", strings.Join(problems, "; "))
	}
	return nil
}

func checkDockerSocket(ctx context.Context, s *suite) error {
	w, err := s.mainWorld(ctx)
	if err != nil {
		return err
	}
	socks := []string{"/var/run/docker.sock", "/run/docker.sock", "/run/containerd/containerd.sock", "/var/run/containerd/containerd.sock"}
	if h, ok := strings.CutPrefix(os.Getenv("DOCKER_HOST"), "unix://"); ok {
		socks = append(socks, h)
	}
	out, err := w.probeRun(ctx, append([]string{"sock"}, socks...)...)
	if err != nil {
		return err
	}
	if c := withPrefix(out, "connected"); len(c) > 0 {
		return fmt.Errorf("a container engine socket answers inside: %s", strings.Join(c, "; "))
	}
	return nil
}

func checkDirectTCP(ctx context.Context, s *suite) error {
	w, err := s.mainWorld(ctx)
	if err != nil {
		return err
	}
	token := "DSH-HOST-" + randHex(4)
	var targets []string
	var listeners []*tcpListener
	defer func() {
		for _, l := range listeners {
			l.l.Close()
		}
	}()
	for _, h := range s.listenHosts() {
		l, err := listenTCP(net.JoinHostPort(h, "0"), token)
		if err != nil {
			return fmt.Errorf("listening on %s: %w", h, err)
		}
		listeners = append(listeners, l)
		targets = append(targets, net.JoinHostPort(h, l.port()))
	}
	// A listener on every host interface, tried at the proxy's host: the
	// one host address a world can route to must serve only the proxy.
	any, err := listenTCP(":0", token)
	if err != nil {
		return err
	}
	listeners = append(listeners, any)
	if ph, ok := proxyHost(ctx, w); ok {
		targets = append(targets, net.JoinHostPort(ph, any.port()))
	}

	// A listener inside another world.
	other, err := s.open(ctx, nil)
	if err != nil {
		return err
	}
	defer other.w.Close()
	otherToken := "DSH-OTHER-WORLD-" + randHex(4)
	r, err := other.w.Exec.Start(ctx, &execworld.Cmd{Argv: []string{other.probe, "listen", otherToken}, StdoutPipe: true})
	if err != nil {
		return err
	}
	defer r.Stop()
	sc := bufio.NewScanner(r.Stdout())
	for sc.Scan() && sc.Text() != "ready" {
		if a, ok := strings.CutPrefix(sc.Text(), "listening "); ok && safeOtherWorldTarget(a) {
			targets = append(targets, a)
		}
	}

	out, err := w.probeRun(ctx, append([]string{"dial"}, targets...)...)
	if err != nil {
		return err
	}
	s.logf("dialled directly: %s", strings.Join(out, "; "))
	if c := withPrefix(out, "connected"); len(c) > 0 {
		return fmt.Errorf("direct TCP connections succeeded: %s", strings.Join(c, "; "))
	}
	if n := len(withPrefix(out, "refused")); n != len(targets) {
		return fmt.Errorf("probe tried %d of %d targets: %v", n, len(targets), out)
	}
	return nil
}

// listenHosts are the host addresses the suite listens on for the direct
// TCP and DNS checks: loopback, Options.ListenHosts, and the IPv4 address
// of every container-engine bridge on this host (docker0, br-*), which
// are this host's own addresses on networks containers can route to.
func (s *suite) listenHosts() []string {
	hosts := append([]string{"127.0.0.1"}, s.opts.ListenHosts...)
	ifs, _ := net.Interfaces()
	for _, ifc := range ifs {
		if !isBridge(ifc.Name) {
			continue
		}
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && !slices.Contains(hosts, ipn.IP.String()) {
				hosts = append(hosts, ipn.IP.String())
			}
		}
	}
	return hosts
}

func isBridge(name string) bool {
	return strings.HasPrefix(name, "br-") || strings.HasPrefix(name, "docker")
}

// proxyHost is the host part of HTTP_PROXY inside w, when it is an
// address of this host that the suite may send to: loopback, or a
// bridge a container engine made.
func proxyHost(ctx context.Context, w *world) (string, bool) {
	res, err := w.run(ctx, &execworld.Cmd{Argv: []string{"/bin/sh", "-c", `printf %s "$HTTP_PROXY"`}})
	if err != nil || res.Stdout.Total == 0 {
		return "", false
	}
	u, err := url.Parse(res.Stdout.String())
	if err != nil {
		return "", false
	}
	a, err := netip.ParseAddr(u.Hostname())
	if err != nil {
		return "", false
	}
	if a.IsLoopback() {
		return a.String(), true
	}
	ifs, _ := net.Interfaces()
	for _, ifc := range ifs {
		if !isBridge(ifc.Name) {
			continue
		}
		addrs, _ := ifc.Addrs()
		for _, ad := range addrs {
			if ipn, ok := ad.(*net.IPNet); ok && ipn.IP.Equal(a.AsSlice()) {
				return a.String(), true
			}
		}
	}
	return "", false
}

// safeOtherWorldTarget reports whether the suite may dial addr, an
// address the other world listens on: loopback, or an address that is
// not one of this host's own interfaces other than engine bridges (a
// container's address on a network the driver created).
func safeOtherWorldTarget(addr string) bool {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return false
	}
	a := ap.Addr()
	if a.IsLoopback() {
		return true
	}
	if !a.IsPrivate() {
		return false
	}
	ifs, _ := net.Interfaces()
	for _, ifc := range ifs {
		addrs, _ := ifc.Addrs()
		for _, ad := range addrs {
			if ipn, ok := ad.(*net.IPNet); ok && ipn.IP.Equal(a.AsSlice()) {
				// One of this host's own addresses: only engine bridges.
				return isBridge(ifc.Name)
			}
			if ipn, ok := ad.(*net.IPNet); ok && ipn.Contains(a.AsSlice()) &&
				(isBridge(ifc.Name) || strings.HasPrefix(ifc.Name, "veth")) {
				return true
			}
		}
	}
	return false
}

func checkResolution(ctx context.Context, s *suite) error {
	w, err := s.mainWorld(ctx)
	if err != nil {
		return err
	}
	var problems []string
	for _, h := range s.listenHosts() {
		u, err := listenUDP(net.JoinHostPort(h, "0"))
		if err != nil {
			return fmt.Errorf("listening for DNS on %s: %w", h, err)
		}
		server := u.c.LocalAddr().String()
		out, err := w.probeRun(ctx, "resolve", server, "dsh-conformance.example")
		u.c.Close()
		if err != nil {
			return err
		}
		s.logf("resolve via %s: %s", server, strings.Join(out, "; "))
		if len(withPrefix(out, "failed")) != 1 {
			problems = append(problems, fmt.Sprintf("lookup via %s: %v", server, out))
		}
		if n := u.packets.Load(); n > 0 {
			problems = append(problems, fmt.Sprintf("%d DNS queries reached the host resolver at %s", n, server))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("name resolution from inside: %s", strings.Join(problems, "; "))
	}
	return nil
}

func checkEgress(ctx context.Context, s *suite) error {
	w, err := s.mainWorld(ctx)
	if err != nil {
		return err
	}
	out, err := w.probeRun(ctx, "http", hostURL(s.allowed.URL, "/ok"))
	if err != nil {
		return err
	}
	if len(out) != 1 || out[0] != fmt.Sprintf("status 200 %q", s.allowToken) {
		return fmt.Errorf("GET of the allowed server %s through the proxy: %v", s.allowed.URL, out)
	}
	out, err = w.probeRun(ctx, "http", hostURL(s.denied.URL, "/no"))
	if err != nil {
		return err
	}
	if len(out) != 1 || strings.HasPrefix(out[0], "status 200") || strings.Contains(out[0], "DSH-MUST-NOT-REACH") || s.deniedHits.Load() > 0 {
		return fmt.Errorf("GET of the server the policy denies (%s) was not refused: %v (%d requests reached it)", s.denied.URL, out, s.deniedHits.Load())
	}
	if !strings.HasPrefix(out[0], "status ") {
		return fmt.Errorf("the proxy did not answer the denied request: %v", out)
	}
	var allowSeen, denySeen bool
	_, deniedPort, _ := net.SplitHostPort(hostPort(s.denied.URL))
	_, allowedPort, _ := net.SplitHostPort(hostPort(s.allowed.URL))
	// A record is written when its request ends, which may trail the
	// response the probe saw.
	for i := 0; i < 100 && !(allowSeen && denySeen); i++ {
		if i > 0 {
			time.Sleep(20 * time.Millisecond)
		}
		for _, l := range lines(s.audit.String()) {
			var rec proxy.AuditRecord
			if json.Unmarshal([]byte(l), &rec) != nil || rec.World != w.w.ID {
				continue
			}
			port := strconv.Itoa(int(rec.Port))
			allowSeen = allowSeen || (rec.Verdict == "allow" && port == allowedPort)
			denySeen = denySeen || (rec.Verdict == "deny" && port == deniedPort)
		}
	}
	if !allowSeen || !denySeen {
		return fmt.Errorf("audit lines of world %s: allow seen %v, deny seen %v; audit:\n%s", w.w.ID, allowSeen, denySeen, s.audit.String())
	}
	return nil
}

func checkPids(ctx context.Context, s *suite) error {
	const limit = 64
	w, err := s.open(ctx, func(sp *sandbox.Spec) {
		n := int64(limit)
		if sp.Resources == nil {
			sp.Resources = &specs.LinuxResources{}
		}
		sp.Resources.Pids = &specs.LinuxPids{Limit: &n}
	})
	if err != nil {
		return err
	}
	defer w.w.Close()
	// A bounded bomb: 2.5x the limit, never more, so a driver without the
	// limit costs the host a few hundred sleeps, not the machine.
	script := `i=0; while [ $i -lt 160 ]; do sleep 120 & i=$((i+1)); done; echo spawned-all`
	res, err := w.run(ctx, &execworld.Cmd{Argv: []string{"/bin/sh", "-c", script}, Timeout: 60 * time.Second, Grace: time.Second})
	if err != nil {
		return err
	}
	if strings.Contains(res.Stdout.String(), "spawned-all") {
		return fmt.Errorf("160 processes started under a pids limit of %d", limit)
	}
	return alive(ctx, w)
}

func checkMemory(ctx context.Context, s *suite) error {
	const limit = 64 << 20
	w, err := s.openWithMemory(ctx, limit)
	if err != nil {
		return err
	}
	defer w.w.Close()
	// tail -c N holds the last N bytes in memory: 160 MB, bounded, so a
	// driver without the limit costs the host 160 MB for a moment.
	script := `head -c 160000000 /dev/zero | tail -c 160000000 >/dev/null; echo "rc=$?"`
	res, err := w.run(ctx, &execworld.Cmd{Argv: []string{"/bin/sh", "-c", script}, Timeout: 90 * time.Second, Grace: time.Second})
	if err != nil {
		return err
	}
	killed := strings.Contains(res.Stdout.String(), "rc=137") || res.Status.Signal == syscall.SIGKILL
	if !killed || res.TimedOut {
		return fmt.Errorf("a 160 MB allocation under a %d MiB limit was not OOM-killed: exit %d, stdout %q", limit>>20, res.ExitCode(), res.Stdout.Data)
	}
	// Only the hog died: the world and the suite's main world still work.
	if err := alive(ctx, w); err != nil {
		return err
	}
	if m, err := s.mainWorld(ctx); err != nil || alive(ctx, m) != nil {
		return fmt.Errorf("the OOM kill reached beyond its world: %v", err)
	}
	return nil
}

// openWithMemory opens a world whose memory limit is limit bytes.
func (s *suite) openWithMemory(ctx context.Context, limit int64) (*world, error) {
	return s.open(ctx, func(sp *sandbox.Spec) {
		if sp.Resources == nil {
			sp.Resources = &specs.LinuxResources{}
		}
		sp.Resources.Memory = &specs.LinuxMemory{Limit: &limit}
	})
}

// alive checks that w still runs a command.
func alive(ctx context.Context, w *world) error {
	res, err := w.run(ctx, &execworld.Cmd{Argv: []string{"/bin/sh", "-c", "echo alive"}})
	if err != nil {
		return fmt.Errorf("the world no longer runs commands: %w", err)
	}
	if res.Stdout.String() != "alive\n" {
		return fmt.Errorf("the world no longer runs commands: exit %d, %q %q", res.ExitCode(), res.Stdout.Data, res.Stderr.Data)
	}
	return nil
}

func checkTimeout(ctx context.Context, s *suite) error {
	w, err := s.mainWorld(ctx)
	if err != nil {
		return err
	}
	marker := "sleep " + strconv.Itoa(300000+rand.IntN(100000))
	// The children ignore SIGTERM (inherited), so only SIGKILL ends them.
	script := `trap "" TERM; ` + marker + ` & ` + marker + ` & echo started; while :; do :; done`
	res, err := w.run(ctx, &execworld.Cmd{Argv: []string{"/bin/sh", "-c", script}, Timeout: 2 * time.Second, Grace: 500 * time.Millisecond})
	if err != nil {
		return err
	}
	if !res.TimedOut || res.ExitCode() != execworld.TimeoutCode || res.Stdout.String() != "started\n" {
		return fmt.Errorf("timeout: timed out %v, status %d, stdout %q; want true, 124, started", res.TimedOut, res.ExitCode(), res.Stdout.Data)
	}
	// The kill is delivered by the time Run returns; reaping by the
	// world's init may trail it by a moment.
	var out []string
	for range 50 {
		out, err = w.probeRun(ctx, "procs", marker)
		if err != nil {
			return err
		}
		if len(withPrefix(out, "none")) == 1 {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("processes survived the timeout: %v", out)
}

func checkTails(ctx context.Context, s *suite) error {
	w, err := s.mainWorld(ctx)
	if err != nil {
		return err
	}
	const nOut, nErr, keep = 300_000, 70_001, 10_000
	var stream strings.Builder
	res, err := w.run(ctx, &execworld.Cmd{Argv: []string{w.probe, "emit", strconv.Itoa(nOut), strconv.Itoa(nErr)}, MaxOutputBytes: keep, Stdout: &stream})
	if err != nil {
		return err
	}
	want := func(n, shift int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = pattern(i + shift)
		}
		return string(b)
	}
	full := want(nOut, 0)
	if stream.String() != full {
		return fmt.Errorf("the stdout stream carried %d bytes, not the %d written, or different ones", stream.Len(), nOut)
	}
	if res.Stdout.Total != nOut || !res.Stdout.Truncated || string(res.Stdout.Data) != full[nOut-keep:] {
		return fmt.Errorf("stdout tail: total %d truncated %v, %d bytes, exact %v", res.Stdout.Total, res.Stdout.Truncated, len(res.Stdout.Data), string(res.Stdout.Data) == full[nOut-keep:])
	}
	fullErr := want(nErr, 7)
	if res.Stderr.Total != nErr || string(res.Stderr.Data) != fullErr[nErr-keep:] {
		return fmt.Errorf("stderr tail: total %d, %d bytes, exact %v", res.Stderr.Total, len(res.Stderr.Data), string(res.Stderr.Data) == fullErr[nErr-keep:])
	}
	return nil
}

func checkExitCodes(ctx context.Context, s *suite) error {
	w, err := s.mainWorld(ctx)
	if err != nil {
		return err
	}
	for _, c := range []struct {
		script string
		code   int
	}{{"exit 0", 0}, {"exit 42", 42}, {"kill -TERM $$", 143}, {"kill -KILL $$", 137}} {
		res, err := w.run(ctx, &execworld.Cmd{Argv: []string{"/bin/sh", "-c", c.script}})
		if err != nil {
			return err
		}
		if res.ExitCode() != c.code {
			return fmt.Errorf("sh -c %q: status %d (%v), want %d", c.script, res.ExitCode(), res.Status, c.code)
		}
	}
	os.WriteFile(filepath.Join(w.ws, "not-executable"), []byte("#!/bin/sh\n"), 0o644)
	for _, c := range []struct {
		argv string
		code int
	}{{"dsh-conformance-no-such-program", 127}, {w.ws + "/not-executable", 126}} {
		_, err := w.w.Exec.Run(ctx, &execworld.Cmd{Argv: []string{c.argv}})
		var se *execworld.StartError
		if !errors.As(err, &se) || se.ShellCode() != c.code {
			return fmt.Errorf("starting %s: %v; want a start error with status %d", c.argv, err, c.code)
		}
	}
	return nil
}

// A command asked to run on a terminal gets one, of the size asked, made
// inside the world, and resizing it reaches the command.
func checkTerminal(ctx context.Context, s *suite) error {
	w, err := s.mainWorld(ctx)
	if err != nil {
		return err
	}
	res, err := w.run(ctx, &execworld.Cmd{
		Argv: []string{"/bin/sh", "-c", `test -t 0 && test -t 1 && test -t 2 && stty size && echo to-stderr >&2`},
		TTY:  &sandbox.WindowSize{Rows: 33, Cols: 99},
	})
	if err != nil {
		return err
	}
	if got, want := string(res.Stdout.Data), "33 99\r\nto-stderr\r\n"; res.ExitCode() != 0 || got != want {
		return fmt.Errorf("on a 33x99 terminal: status %d, output %q, want %q", res.ExitCode(), got, want)
	}
	if res.Stderr.Total != 0 {
		return fmt.Errorf("on a terminal stderr got %q; everything must arrive through the terminal", res.Stderr.Data)
	}
	// Resizing: the command waits until it sees the new size.
	r, err := w.w.Exec.Start(ctx, &execworld.Cmd{
		Argv:    []string{"/bin/sh", "-c", `while [ "$(stty size)" = "33 99" ]; do sleep 0.01; done; stty size`},
		TTY:     &sandbox.WindowSize{Rows: 33, Cols: 99},
		Timeout: 30 * time.Second,
	})
	if err != nil {
		return err
	}
	if err := r.Resize(sandbox.WindowSize{Rows: 40, Cols: 120}); err != nil {
		r.Stop()
		return fmt.Errorf("resizing: %w", err)
	}
	res, err = r.Wait()
	if err != nil {
		return err
	}
	if got := string(res.Stdout.Data); res.ExitCode() != 0 || got != "40 120\r\n" {
		return fmt.Errorf("after resizing to 40x120: status %d, output %q", res.ExitCode(), got)
	}
	return nil
}
