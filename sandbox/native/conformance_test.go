package native

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/execworld/conformance"
	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/sandbox"
)

// The unprivileged leg: TestConformanceUnprivileged re-runs TestConformance
// as unprivUser with these set. unprivCgroupEnv names the cgroup parent
// delegated to that user, unprivProbeEnv the prebuilt probe (the user has
// no go build cache).
const (
	unprivCgroupEnv = "DSH_NATIVE_TEST_UNPRIV_CGROUP"
	unprivProbeEnv  = "DSH_NATIVE_TEST_UNPRIV_PROBE"
)

// TestConformance runs the shared suite every confining driver passes.
func TestConformance(t *testing.T) {
	testenv.RequireUserNS(t)
	opts := &Options{Executable: initExe(t)}
	var copts conformance.Options
	if parent := os.Getenv(unprivCgroupEnv); parent != "" {
		// As the unprivileged user: its default state directory
		// (/tmp/dsh-native-UID) and the cgroup delegated to it.
		opts.CgroupParent = parent
		copts.Probe = os.Getenv(unprivProbeEnv)
	} else {
		// The default state directory, as dsh uses it: whether worlds
		// can see each other's state there is one of the checks.
		testenv.RequireCgroups(t)
	}
	conformance.Run(t, New(opts), copts)
}

// unprivCgroupParent is the cgroup parent delegated to unprivUser.
const unprivCgroupParent = "dsh-native-unpriv-test"

// TestConformanceUnprivileged runs the suite as an unprivileged user:
// TestConformance in a copy of this binary run as unprivUser, with the
// worlds' limits in a cgroup subtree delegated to that user the way a
// deployment would. Each check of the suite is a subtest of the child;
// the child's failing checks fail this test by name.
func TestConformanceUnprivileged(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireUserNS(t)
	testenv.RequireCgroups(t)
	uid, gid := unprivAccount(t)
	parent := delegateCgroups(t, uid, gid)

	// Everything the child reads lives in dir (traversable by all); its
	// TMPDIR, which holds its workspaces, is its own. Its state directory
	// is the default, /tmp/dsh-native-UID.
	dir := hostTempDir(t)
	os.Chmod(dir, 0o755)
	bin := unprivBinary(t, dir)
	probe, err := conformance.BuildProbe()
	if err != nil {
		t.Fatal(err)
	}
	probePath := filepath.Join(dir, "probe")
	if err := os.WriteFile(probePath, probe, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(tmp, uid, gid); err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { os.RemoveAll(sandbox.StateDirs(uid)[2]) })

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-test.run", "^TestConformance$", "-test.v", "-test.count=1", "-test.timeout=4m")
	cmd.Dir = dir
	cmd.Env = []string{
		"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + tmp, "TMPDIR=" + tmp,
		unprivCgroupEnv + "=" + parent, unprivProbeEnv + "=" + probePath,
		"DSH_REQUIRE_USERNS=1", // a missing requirement fails the leg, never skips it
	}
	if init := os.Getenv(testInitEnv); init != "" {
		// The same init for the user: a copy it can read.
		b, err := os.ReadFile(init)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "dsh-init")
		if err := os.WriteFile(p, b, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd.Env = append(cmd.Env, testInitEnv+"="+p)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		t.Fatalf("starting the suite as %s: %v", unprivUser, err)
	}
	var failed, skipped []string
	passed := false
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		t.Log(line)
		if m := resultLine.FindStringSubmatch(line); m != nil {
			switch {
			case m[1] == "FAIL" && m[2] != "TestConformance":
				failed = append(failed, m[2])
			case m[1] == "SKIP":
				skipped = append(skipped, m[2])
			case m[1] == "PASS" && m[2] == "TestConformance":
				passed = true
			}
		}
	}
	r.Close()
	err = cmd.Wait()
	switch {
	case len(failed) > 0:
		t.Errorf("as %s (uid %d), %d checks failed: %v", unprivUser, uid, len(failed), failed)
	case len(skipped) > 0:
		t.Errorf("as %s (uid %d), the suite skipped %v (a skip is not a pass)", unprivUser, uid, skipped)
	case err != nil || !passed:
		t.Errorf("as %s (uid %d), the suite did not pass: %v (see the log above)", unprivUser, uid, err)
	}
}

// resultLine matches go test -v's verdict of a test or subtest.
var resultLine = regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): (\S+) `)

// delegateCgroups creates unprivCgroupParent in each v1 hierarchy the
// driver uses and hands it to uid (the directory, cgroup.procs, tasks),
// as a deployment delegates a subtree to a user; the worlds' cgroups are
// then the user's own children of it. It is removed when the test ends,
// and a leftover of a crashed run (with its worlds' cgroups) first.
func delegateCgroups(t *testing.T, uid, gid int) string {
	t.Helper()
	if unified() {
		// Delegation on v2 also needs the caller inside the subtree
		// (moves need write access to the common ancestor).
		msg := "delegating a cgroup v2 subtree to " + unprivUser + " is not built into this test; it runs on cgroup v1 and hybrid hosts"
		if os.Getenv("DSH_REQUIRE_CGROUPS") == "1" {
			t.Fatal(msg + ", and DSH_REQUIRE_CGROUPS=1 requires it")
		}
		t.Skip(msg)
	}
	remove := func() error {
		_, _ = reap("", unprivCgroupParent)
		var errs []error
		for _, c := range v1Controllers {
			if err := syscall.Rmdir(filepath.Join(cgroupRoot, c, unprivCgroupParent)); err != nil && err != syscall.ENOENT {
				errs = append(errs, fmt.Errorf("removing cgroup %s/%s: %w", c, unprivCgroupParent, err))
			}
		}
		return errors.Join(errs...)
	}
	if err := remove(); err != nil {
		t.Fatalf("a previous run's delegated cgroup is still there: %v", err)
	}
	t.Cleanup(func() {
		if err := remove(); err != nil {
			t.Error(err)
		}
	})
	for _, c := range v1Controllers {
		d := filepath.Join(cgroupRoot, c, unprivCgroupParent)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{d, filepath.Join(d, "cgroup.procs"), filepath.Join(d, "tasks")} {
			if err := os.Chown(f, uid, gid); err != nil {
				t.Fatalf("delegating cgroup %s to %s: %v", d, unprivUser, err)
			}
		}
	}
	return unprivCgroupParent
}
