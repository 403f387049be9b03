package native

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/sandbox"
	"github.com/dsh-dev/dsh/sandbox/native/initspawn"
)

const unprivUser = "dsh-native-test"

// unprivHelper runs as the unprivileged user: it reports what Open does
// with limits (no writable cgroup) and without them.
func unprivHelper(ws string) int {
	d := New(nil)
	_, err := d.Open(context.Background(), sandbox.DefaultSpec(ws), nil)
	fmt.Printf("limits: unavailable=%v err=%v\n", errors.Is(err, ErrUnavailable), err)

	spec := sandbox.DefaultSpec(ws)
	spec.Resources = nil
	spec.Egress = true
	in, err := d.Open(context.Background(), spec, &sandbox.OpenOptions{Egress: &fakeProxy{}})
	if err != nil {
		fmt.Println("open:", err)
		return 1
	}
	defer in.Close()
	p, err := in.Start(context.Background(), sandbox.ProcessSpec{Env: spec.Env, Argv: []string{"sh", "-c",
		"echo uid=$(id -u); touch " + ws + "/made-inside && echo ws=writable; touch /etc/x 2>/dev/null || echo etc=readonly; grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status"}})
	if err != nil {
		fmt.Println("start:", err)
		return 1
	}
	go io.Copy(os.Stderr, p.Stderr())
	io.Copy(os.Stdout, p.Stdout())
	st, err := p.Wait()
	fmt.Println("status:", st, err)
	// A terminal inside the world, as this user.
	tty := &sandbox.WindowSize{Rows: 33, Cols: 99}
	if p, err = in.Start(context.Background(), sandbox.ProcessSpec{Env: spec.Env, TTY: tty, Argv: []string{"sh", "-c", "test -t 1 && echo tty=$(stty size)"}}); err == nil {
		go io.Copy(os.Stderr, p.Stderr())
		io.Copy(os.Stdout, p.Stdout())
		p.Wait()
	} else {
		fmt.Println("start on a terminal:", err)
	}
	// Egress through the forwarder and the unix socket, as this user.
	if p, err = in.Start(context.Background(), sandbox.ProcessSpec{Env: withProxy(spec.Env), Argv: []string{"/proc/self/exe", helperArg, "get", "http://egress-test.invalid/"}}); err == nil {
		go io.Copy(os.Stderr, p.Stderr())
		io.Copy(os.Stdout, p.Stdout())
		p.Wait()
	}
	r := d.Inspect(context.Background())
	fmt.Printf("probe: userns=%v pivot=%v cgroupWritable=%v trial=%q\n", r.UserNamespaces, r.PivotRoot, r.CgroupWritable, r.TrialError)

	// A workspace swapped for a link after the checks: the init binds by
	// the path itself (no protected paths here to open it first).
	sub, other := filepath.Join(ws, "swap-sub"), filepath.Join(ws, "swap-other")
	os.Mkdir(sub, 0o755)
	os.Mkdir(other, 0o755)
	spec = sandbox.DefaultSpec(sub)
	spec.Resources, spec.Protected = nil, nil
	afterPlan = func() {
		os.Rename(sub, sub+".checked")
		os.Symlink(other, sub)
	}
	in2, err := d.Open(context.Background(), spec, nil)
	afterPlan = func() {}
	if err == nil {
		in2.Close()
	}
	fmt.Printf("swapped: %v\n", err)
	return 0
}

// unprivAccount returns the uid and gid of unprivUser, creating the
// system account (removed when the test ends) if it does not exist.
func unprivAccount(t *testing.T) (uid, gid int) {
	t.Helper()
	useradd := testenv.RequireCommand(t, "useradd")
	u, err := user.Lookup(unprivUser)
	if err != nil {
		if out, err := exec.Command(useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", unprivUser).CombinedOutput(); err != nil {
			t.Fatalf("useradd: %v: %s", err, out)
		}
		t.Cleanup(func() { exec.Command("userdel", unprivUser).Run() })
		if u, err = user.Lookup(unprivUser); err != nil {
			t.Fatal(err)
		}
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid
}

// unprivBinary copies the test binary, which lives in a root-only build
// directory, into dir (which must be traversable by everyone) so that
// unprivUser can run it.
func unprivBinary(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "native.test")
	src, err := os.ReadFile(testExe(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, src, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

func TestUnprivilegedUser(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireUserNS(t)
	uid, gid := unprivAccount(t)

	// The user runs its own copy of the test binary, in a workspace it
	// owns.
	dir := hostTempDir(t)
	os.Chmod(dir, 0o755)
	bin := unprivBinary(t, dir)
	ws := filepath.Join(dir, "ws")
	os.Mkdir(ws, 0o755)
	os.Chown(ws, uid, gid)
	t.Cleanup(func() { os.RemoveAll(sandbox.StateDirs(uid)[2]) })

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, helperArg, "unpriv", ws)
	// The workspace is in the home, not the home itself (which a Spec
	// must allow explicitly).
	// $TMPDIR and $XDG_RUNTIME_DIR point into the workspace: dsh's state
	// must not follow them there, where the world writes.
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + dir, "TMPDIR=" + ws, "XDG_RUNTIME_DIR=" + ws}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper as %s: %v\n%s", unprivUser, err, out)
	}
	s := string(out)
	t.Logf("as %s (uid %d):\n%s", unprivUser, uid, s)
	for _, want := range []string{
		"limits: unavailable=true", "run dsh as root",
		fmt.Sprintf("uid=%d\n", uid), "ws=writable\n", "etc=readonly\n",
		"CapEff:\t0000000000000000\n", "CapBnd:\t0000000000000000\n", "NoNewPrivs:\t1\n", "Seccomp:\t2\n",
		"status: exit status 0 <nil>", "tty=33 99\r\n", `status 200 body "proxied egress-test.invalid"`,
		"probe: userns=true pivot=true cgroupWritable=false",
		"swapped: native: setting up the sandbox: mounting the workspace: binding " + ws + "/swap-sub: a symbolic link is in its path",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("unprivileged run lacks %q", want)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(ws, "dsh-native*")); len(m) > 0 {
		t.Errorf("the state directory followed the environment into the workspace: %v", m)
	}
	dirs := sandbox.StateDirs(uid)
	want := dirs[2]
	if initspawn.PrivateDir(filepath.Dir(dirs[1]), uid) {
		want = dirs[1]
	}
	if _, err := os.Stat(want); err != nil {
		t.Errorf("the default state directory: %v", err)
	}
	fi, err := os.Stat(filepath.Join(ws, "made-inside"))
	if err != nil {
		t.Fatalf("file made inside the world: %v", err)
	}
	if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != uid {
		t.Errorf("file made inside is owned by uid %d, want the caller's %d", st.Uid, uid)
	}
}

// With user namespaces forbidden, Open fails closed and says which
// setting to change. The limit is set only inside a user namespace the
// test creates (user.max_user_namespaces is per user namespace), so the
// machine's setting is untouched.
func TestNoUserNamespacesFailsClosed(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireUserNS(t)
	ws := hostTempDir(t)
	cmd := exec.Command(testExe(t), helperArg, "nouserns", ws, stateDir(t))
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 65536}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 65536}},
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	s := string(out)
	t.Logf("with user.max_user_namespaces=0:\n%s", s)
	for _, want := range []string{
		"unavailable=true\n", "native: cannot create a user namespace", "user.max_user_namespaces=0",
		"sysctl -w user.max_user_namespaces=", "probe userns=false ready=false",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
}
