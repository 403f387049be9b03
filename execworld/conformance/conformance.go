package conformance

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/netpolicy"
	"github.com/dsh-dev/dsh/sandbox"
)

// Options adapt the suite to a driver. The zero value works for a driver
// whose defaults come from sandbox.DefaultSpec.
type Options struct {
	// Spec returns the Spec of a world on workspace (image, user, ...).
	// The suite then adds its masks and, for the limit checks, its own
	// small limits. If nil, sandbox.DefaultSpec is used.
	Spec func(workspace string) *sandbox.Spec
	// Image, if set, replaces the Spec's image (docker driver).
	Image string
	// Masks are added to the Spec's masks (the suite adds its own too).
	Masks []string
	// ListenHosts are extra host addresses (IP literals) where the suite
	// starts listeners that no world may reach directly. Host loopback
	// and the address of every docker0/br-* bridge are always covered.
	ListenHosts []string
	// Dir is where the suite makes workspaces and fake secrets. It must
	// be a host directory outside /tmp (which drivers replace with a
	// private tmpfs, hiding what the checks need to see masked). If
	// empty, /var/tmp.
	Dir string
	// Timeout bounds each check. If zero, 2 minutes.
	Timeout time.Duration
	// Probe is the path of a probe binary made by BuildProbe, for a run
	// where the go tool cannot build it (an unprivileged user without
	// the build cache). If empty, Run builds it.
	Probe string
}

// Run runs every check against backend, each as a subtest. It must not be
// called from a parallel test: it sets HOME to a fake home directory
// whose credential files the driver's "~" masks must hide.
func Run(t *testing.T, backend execworld.Backend, opts Options) {
	t.Helper()
	s := setup(t, backend, opts)
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if err := s.run(t, c); err != nil {
				t.Error(err)
			}
		})
	}
}

// check is one conformance check. confines marks the checks an
// unconfined driver must fail (the suite's self-test proves each one can
// fail).
type check struct {
	name     string
	confines bool
	run      func(ctx context.Context, s *suite) error
}

// suite is the shared state of one Run.
type suite struct {
	t       testing.TB
	backend execworld.Backend
	opts    Options
	base    string // Options.Dir/dsh-conformance-*
	probe   []byte

	fakeHome    string // HOME during the run, with credential files
	secretDir   string // a directory masked by absolute path
	secretToken string // content of every fake secret

	allowed, denied *httptest.Server // egress targets on host loopback
	deniedHits      atomic.Int64
	allowToken      string
	audit           *syncBuffer

	// logf logs for the check that is running (checks run one at a time).
	logf func(format string, args ...any)

	mu   sync.Mutex // guards main
	main *world     // the shared world, opened on first use
}

type world struct {
	w     *execworld.World
	ws    string // workspace
	probe string // absolute path of the probe inside
}

func setup(t *testing.T, backend execworld.Backend, opts Options) *suite {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = "/var/tmp"
	}
	if opts.Timeout == 0 {
		opts.Timeout = 2 * time.Minute
	}
	var probe []byte
	var err error
	if opts.Probe != "" {
		probe, err = os.ReadFile(opts.Probe)
	} else {
		probe, err = BuildProbe()
	}
	if err != nil {
		t.Fatal(err)
	}
	base, err := os.MkdirTemp(opts.Dir, "dsh-conformance-")
	if err != nil {
		t.Fatalf("conformance: making the suite directory in %s: %v", opts.Dir, err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	// Traversable by the world's (possibly unprivileged) user.
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	s := &suite{
		t: t, backend: backend, opts: opts, base: base, probe: probe,
		secretToken: "DSH-SECRET-" + randHex(8),
		allowToken:  "DSH-ALLOWED-" + randHex(8),
		audit:       &syncBuffer{},
	}

	// A fake home with credentials where the default "~" masks point.
	s.fakeHome = filepath.Join(base, "home")
	s.secretDir = filepath.Join(base, "secret")
	for _, f := range []string{
		filepath.Join(s.fakeHome, ".ssh", "id_ed25519"),
		filepath.Join(s.fakeHome, ".aws", "credentials"),
		filepath.Join(s.fakeHome, ".docker", "config.json"),
		filepath.Join(s.secretDir, "token"),
	} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		// World-readable on purpose: only the mask may hide it.
		if err := os.WriteFile(f, []byte(s.secretToken+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", s.fakeHome)
	t.Setenv("DSH_CONFORMANCE_HOST_ONLY", s.secretToken)

	s.allowed = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(s.allowToken))
	}))
	t.Cleanup(s.allowed.Close)
	s.denied = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.deniedHits.Add(1)
		w.Write([]byte("DSH-MUST-NOT-REACH"))
	}))
	t.Cleanup(s.denied.Close)
	t.Cleanup(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.main != nil {
			s.main.w.Close()
		}
	})
	return s
}

// run runs one check; its log lines go to t.
func (s *suite) run(t testing.TB, c check) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.Timeout)
	defer cancel()
	s.logf = t.Logf
	defer func() { s.logf = nil }()
	return c.run(ctx, s)
}

// spec builds a Spec for a new world on workspace, with the suite's masks.
func (s *suite) spec(ws string) *sandbox.Spec {
	var spec *sandbox.Spec
	if s.opts.Spec != nil {
		spec = s.opts.Spec(ws)
	} else {
		spec = sandbox.DefaultSpec(ws)
	}
	spec.Workspace = ws
	if s.opts.Image != "" {
		spec.Image = s.opts.Image
	}
	for _, m := range append([]string{s.secretDir, "~/.ssh", "~/.aws", "~/.docker"}, s.opts.Masks...) {
		if !slices.Contains(spec.Masks, m) {
			spec.Masks = append(spec.Masks, m)
		}
	}
	return spec
}

// egressPolicy allows exactly the allowed server, on the host's
// loopback, by the name worlds reach it by (netpolicy.HostName).
func (s *suite) egressPolicy() (*netpolicy.Policy, error) {
	_, port, _ := net.SplitHostPort(hostPort(s.allowed.URL))
	return netpolicy.New(netpolicy.Config{Default: "deny", Allow: []string{net.JoinHostPort(netpolicy.HostName, port)}})
}

// open starts a world with its own workspace under the suite's egress
// policy; mutate may change the Spec. The caller closes it.
func (s *suite) open(ctx context.Context, mutate func(*sandbox.Spec)) (*world, error) {
	return s.openWith(ctx, mutate, nil)
}

// openWith is open that lets opts change the execworld.Options last (a
// check's own egress policy or proxy resolver).
func (s *suite) openWith(ctx context.Context, mutate func(*sandbox.Spec), opts func(*execworld.Options)) (*world, error) {
	ws, err := os.MkdirTemp(s.base, "ws-")
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(ws, 0o777); err != nil {
		return nil, err
	}
	probe := filepath.Join(ws, ".dsh-probe")
	if err := os.WriteFile(probe, s.probe, 0o755); err != nil {
		return nil, err
	}
	spec := s.spec(ws)
	if mutate != nil {
		mutate(spec)
	}
	pol, err := s.egressPolicy()
	if err != nil {
		return nil, err
	}
	o := &execworld.Options{Spec: spec, Egress: pol, Audit: s.audit}
	if opts != nil {
		opts(o)
	}
	w, err := execworld.Open(ctx, s.backend, o)
	if err != nil {
		return nil, fmt.Errorf("opening a world: %w", err)
	}
	return &world{w: w, ws: w.FS.Root(), probe: filepath.Join(w.FS.Root(), ".dsh-probe")}, nil
}

// mainWorld is the world most checks share.
func (s *suite) mainWorld(ctx context.Context) (*world, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.main != nil {
		return s.main, nil
	}
	w, err := s.open(ctx, nil)
	if err != nil {
		return nil, err
	}
	s.main = w
	return w, nil
}

// runIn runs argv in w and returns the result; a start failure is an
// error.
func (w *world) run(ctx context.Context, c *execworld.Cmd) (*execworld.Result, error) {
	if c.Timeout == 0 {
		c.Timeout = 60 * time.Second
	}
	res, err := w.w.Exec.Run(ctx, c)
	if err != nil {
		return res, fmt.Errorf("running %q: %w", c.Argv, err)
	}
	return res, nil
}

// probeRun runs the probe with args and returns its stdout lines.
func (w *world) probeRun(ctx context.Context, args ...string) ([]string, error) {
	res, err := w.run(ctx, &execworld.Cmd{Argv: append([]string{w.probe}, args...)})
	if err != nil {
		return nil, err
	}
	if res.ExitCode() != 0 {
		return nil, fmt.Errorf("probe %v exited %d: %s%s", args, res.ExitCode(), res.Stdout.Data, res.Stderr.Data)
	}
	return lines(res.Stdout.String()), nil
}

func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// withPrefix returns the lines that start with word.
func withPrefix(ls []string, word string) []string {
	var out []string
	for _, l := range ls {
		if strings.HasPrefix(l, word+" ") || l == word {
			out = append(out, l)
		}
	}
	return out
}

func hostPort(rawURL string) string {
	return strings.TrimPrefix(rawURL, "http://")
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// syncBuffer is a bytes.Buffer safe for the proxy's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// tcpListener accepts on addr and writes token to every connection; it
// counts connections.
type tcpListener struct {
	l     net.Listener
	conns atomic.Int64
}

func listenTCP(addr, token string) (*tcpListener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	tl := &tcpListener{l: l}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			tl.conns.Add(1)
			c.Write([]byte(token))
			c.Close()
		}
	}()
	return tl, nil
}

func (tl *tcpListener) port() string {
	return strconv.Itoa(tl.l.Addr().(*net.TCPAddr).Port)
}

// udpListener counts datagrams: a DNS server that never answers.
type udpListener struct {
	c       net.PacketConn
	packets atomic.Int64
}

func listenUDP(addr string) (*udpListener, error) {
	c, err := net.ListenPacket("udp", addr)
	if err != nil {
		return nil, err
	}
	u := &udpListener{c: c}
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := c.ReadFrom(buf); err != nil {
				return
			}
			u.packets.Add(1)
		}
	}()
	return u, nil
}

var errNoDenial = errors.New("the probe reported no attempt")
