package native

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/sandbox"
)

// runIn runs argv as PID 1 of a fresh world (the setup stage alone, no
// pid1 server) and returns its combined output.
func runIn(t *testing.T, spec *sandbox.Spec, argv ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	d := New(&Options{Executable: initExe(t), StateDir: stateDir(t)})
	err := d.runOnce(ctx, spec, argv, spec.Env, &out)
	return out.String(), err
}

func sh(t *testing.T, spec *sandbox.Spec, script string) (string, error) {
	t.Helper()
	return runIn(t, spec, "/bin/sh", "-c", script)
}

func testExe(t testing.TB) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// stateDir is a private state directory per test, so reaping and
// leftover checks see only the test's own worlds.
func stateDir(t testing.TB) string {
	d := filepath.Join(os.TempDir(), "dsh-native-test-"+strings.ReplaceAll(t.Name(), "/", "_"))
	os.RemoveAll(d)
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func TestProcessIsConfined(t *testing.T) {
	testenv.RequireUserNS(t)
	ws := t.TempDir()
	out, err := sh(t, sandbox.DefaultSpec(ws), `
grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status
echo host=$(hostname)
echo pid=$$
touch /etc/dsh-test 2>/dev/null && echo etc=writable || echo etc=readonly
touch /usr/dsh-test 2>/dev/null && echo usr=writable || echo usr=readonly
echo hi > `+ws+`/out && echo ws=writable
echo hi > /tmp/x && echo tmp=writable
(echo x > /proc/sys/kernel/core_pattern) 2>/dev/null && echo sysctl=writable || echo sysctl=readonly
ls /proc | grep -cE '^[0-9]+$' | sed 's/^/procs=/'
`)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	for _, want := range []string{
		"CapInh:\t0000000000000000", "CapPrm:\t0000000000000000", "CapEff:\t0000000000000000",
		"CapBnd:\t0000000000000000", "CapAmb:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2",
		"host=dsh", "pid=1", "etc=readonly", "usr=readonly", "ws=writable", "tmp=writable", "sysctl=readonly",
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Only the shell and its children (ls, grep) are visible: no host
	// process is in this pid namespace.
	if !strings.Contains(out, "procs=") || strings.Contains(out, "procs=0\n") {
		t.Errorf("unexpected /proc listing:\n%s", out)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "out")); err != nil || string(b) != "hi\n" {
		t.Errorf("workspace write did not reach the host: %q, %v", b, err)
	}
	if _, err := os.Stat("/etc/dsh-test"); err == nil {
		os.Remove("/etc/dsh-test")
		t.Error("the sandbox wrote /etc on the host")
	}
}

func TestMasksHideSecrets(t *testing.T) {
	testenv.RequireUserNS(t)
	ws := t.TempDir()
	// Not in /tmp: the sandbox's tmpfs /tmp would hide them anyway.
	home := hostTempDir(t)
	t.Setenv("HOME", home)
	secretDir := filepath.Join(home, ".ssh")
	if err := os.Mkdir(secretDir, 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(secretDir, "id_ed25519"), []byte("SECRET-KEY"), 0o600)
	secretFile := filepath.Join(hostTempDir(t), "token")
	os.WriteFile(secretFile, []byte("SECRET-TOKEN"), 0o600)
	// A symlink to a secret is masked at its target.
	link := filepath.Join(home, ".netrc")
	os.Symlink(secretFile, link)

	spec := sandbox.DefaultSpec(ws)
	spec.Masks = []string{"~/.ssh", secretFile, "~/.netrc", "/nonexistent/dsh-mask"}
	out, err := sh(t, spec, `
ls -A `+secretDir+` 2>/dev/null | sed 's/^/ls:/'
cat `+secretDir+`/id_ed25519 2>/dev/null
cat `+secretFile+` 2>/dev/null
cat `+link+` 2>/dev/null
touch `+secretDir+`/new 2>/dev/null && echo maskdir=writable
echo x > `+secretFile+` ; cat `+secretFile+`
echo done
`)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	if strings.Contains(out, "SECRET") || strings.Contains(out, "ls:") || strings.Contains(out, "maskdir=writable") {
		t.Errorf("a masked secret is visible or writable:\n%s", out)
	}
	if !strings.Contains(out, "done") {
		t.Errorf("script did not finish:\n%s", out)
	}
	if b, _ := os.ReadFile(secretFile); string(b) != "SECRET-TOKEN" {
		t.Errorf("the sandbox changed a masked file on the host: %q", b)
	}
}

// The read-only masks over directories show one empty tmpfs between
// them, read-only down to its superblock: each is empty, refuses writes,
// and is mounted ro, nosuid, nodev and noexec, as a tmpfs of its own was.
func TestReadonlyDirectoryMasksShareOneEmptyTmpfs(t *testing.T) {
	testenv.RequireUserNS(t)
	var dirs []string
	for range 3 {
		d := hostTempDir(t)
		if err := os.WriteFile(filepath.Join(d, "secret"), []byte("SECRET"), 0o600); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	spec := sandbox.DefaultSpec(t.TempDir())
	spec.Masks = dirs
	script := ""
	for _, d := range dirs {
		script += `d=` + d + `
echo "$d files=$(ls -A $d | wc -l) dev=$(stat -c %d $d)"
touch $d/new 2>/dev/null && echo "$d writable"
awk -v d=$d '$5 == d { print d, "options", $6, "super", $NF }' /proc/self/mountinfo
`
	}
	out, err := sh(t, spec, script)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	devs := map[string]bool{}
	for _, d := range dirs {
		var files, dev string
		for _, line := range strings.Split(out, "\n") {
			if f, ok := strings.CutPrefix(line, d+" files="); ok {
				files, dev, _ = strings.Cut(f, " dev=")
			}
		}
		if files != "0" {
			t.Errorf("mask %s holds %q files, want none:\n%s", d, files, out)
		}
		devs[dev] = true
		if strings.Contains(out, d+" writable") {
			t.Errorf("mask %s is writable", d)
		}
		if !strings.Contains(out, d+" options ro,nosuid,nodev,noexec") {
			t.Errorf("mask %s is not mounted ro,nosuid,nodev,noexec:\n%s", d, out)
		}
		if !regexp.MustCompile(regexp.QuoteMeta(d) + ` options \S+ super ro,`).MatchString(out) {
			t.Errorf("mask %s's tmpfs is not read-only itself:\n%s", d, out)
		}
	}
	if len(devs) != 1 {
		t.Errorf("the masks show %d file systems, want one between them:\n%s", len(devs), out)
	}
}

func TestWorkspaceInsideMaskStaysReachable(t *testing.T) {
	testenv.RequireUserNS(t)
	parent := hostTempDir(t)
	ws := filepath.Join(parent, "project")
	os.Mkdir(ws, 0o755)
	os.WriteFile(filepath.Join(parent, "secret"), []byte("SECRET"), 0o600)
	spec := sandbox.DefaultSpec(ws)
	spec.Masks = []string{parent}
	out, err := sh(t, spec, `cat `+parent+`/secret 2>/dev/null; echo ok > `+ws+`/f && echo ws=writable; touch `+parent+`/x 2>/dev/null && echo parent=writable; echo end`)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	if strings.Contains(out, "SECRET") || strings.Contains(out, "parent=writable") || !strings.Contains(out, "ws=writable") {
		t.Errorf("mask above the workspace:\n%s", out)
	}
}

func TestSeccompDeniesEscapes(t *testing.T) {
	helperInit(t)
	testenv.RequireUserNS(t)
	out, err := runIn(t, sandbox.DefaultSpec(t.TempDir()), "/proc/self/exe", helperArg, "syscalls")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			got[f[0]] = f[1]
		}
	}
	for _, c := range syscallChecks() {
		want := "EPERM"
		if c.name == "clone3" {
			want = "ENOSYS" // so libc falls back to the checked clone
		}
		if got[c.name] != want {
			t.Errorf("%s in the sandbox = %q, want %s", c.name, got[c.name], want)
		}
	}
}

func TestNoNetworkWithoutEgress(t *testing.T) {
	helperInit(t)
	testenv.RequireUserNS(t)
	// A listener on the host's loopback that the sandbox must not reach.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := l.Accept(); err == nil {
			c.Close()
			accepted <- struct{}{}
		}
	}()
	out, err := runIn(t, sandbox.DefaultSpec(t.TempDir()), "/proc/self/exe", helperArg, "dial", l.Addr().String())
	if err == nil || !strings.Contains(out, "dial failed") {
		t.Errorf("direct TCP to the host's loopback from the sandbox: err=%v\n%s", err, out)
	}
	select {
	case <-accepted:
		t.Error("the host listener accepted a connection from the sandbox")
	default:
	}
	out, err = sh(t, sandbox.DefaultSpec(t.TempDir()), `tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '; echo routes=$(tail -n +2 /proc/net/route | wc -l)`)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	if strings.TrimSpace(out) != "lo\nroutes=0" {
		t.Errorf("interfaces and routes in the sandbox = %q, want only lo and no routes", out)
	}
}

func TestBadSpecIsRejected(t *testing.T) {
	ws := t.TempDir()
	cases := map[string]func(*sandbox.Spec){
		"Workspace":       func(s *sandbox.Spec) { s.Workspace = "relative" },
		"Workspace ":      func(s *sandbox.Spec) { s.Workspace = "/" },
		"ReadonlyRoot":    func(s *sandbox.Spec) { s.ReadonlyRoot = false },
		"NoNewPrivileges": func(s *sandbox.Spec) { s.NoNewPrivileges = false },
		"Capabilities":    func(s *sandbox.Spec) { s.Capabilities.Bounding = []string{"CAP_SYS_ADMIN"} },
		"Mounts":          func(s *sandbox.Spec) { s.Mounts = append(s.Mounts, sandboxMount("overlay")) },
		"Rlimits":         func(s *sandbox.Spec) { s.Rlimits = append(s.Rlimits, sandboxRlimit("RLIMIT_BOGUS")) },
	}
	for field, mutate := range cases {
		spec := sandbox.DefaultSpec(ws)
		mutate(spec)
		_, err := New(&Options{Executable: initExe(t), StateDir: stateDir(t)}).Open(context.Background(), spec, nil)
		if !errors.Is(err, ErrUnsupportedSpec) || !strings.Contains(err.Error(), "Spec."+strings.TrimSpace(field)) {
			t.Errorf("Open with bad %s = %v, want an ErrUnsupportedSpec naming it", field, err)
		}
	}
}

// hostTempDir is a temporary directory outside /tmp, which the sandbox
// replaces with its own tmpfs.
func hostTempDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("/var/tmp", "dsh-native-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func TestMasksInsideTheWorkspace(t *testing.T) {
	testenv.RequireUserNS(t)
	// The workspace is a home directory with credentials in it.
	ws := hostTempDir(t)
	t.Setenv("HOME", ws)
	os.Mkdir(filepath.Join(ws, ".aws"), 0o700)
	os.WriteFile(filepath.Join(ws, ".aws", "credentials"), []byte("SECRET"), 0o600)
	spec := sandbox.DefaultSpec(ws)
	spec.AllowHomeWorkspace = true
	spec.Masks = []string{"~/.aws"}
	out, err := sh(t, spec, `cat `+ws+`/.aws/credentials 2>&1; echo ok > `+ws+`/f && echo ws=writable`)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	if strings.Contains(out, "SECRET") || !strings.Contains(out, "ws=writable") {
		t.Errorf("mask inside the workspace:\n%s", out)
	}
}

func TestRootCallerCannotReadOtherHomes(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireUserNS(t)
	home, err := os.MkdirTemp("/home", "dsh-native-test-")
	if err != nil {
		t.Skipf("cannot create a directory in /home: %v", err)
	}
	defer os.RemoveAll(home)
	os.WriteFile(filepath.Join(home, "secret"), []byte("SECRET"), 0o600)
	// A workspace inside /home stays reachable.
	ws := filepath.Join(home, "ws")
	os.Mkdir(ws, 0o755)
	out, err := sh(t, sandbox.DefaultSpec(ws), `cat `+home+`/secret 2>&1; ls /sys/firmware | wc -l | sed s/^/firmware=/; echo ok > `+ws+`/f && echo ws=writable`)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	if strings.Contains(out, "SECRET") || !strings.Contains(out, "ws=writable") || !strings.Contains(out, "firmware=0") {
		t.Errorf("as host uid 0 in the sandbox:\n%s", out)
	}
}
