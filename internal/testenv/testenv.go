package testenv

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// require skips t with why, or fails it when the environment variable
// envVar is "1" (make test and CI set them, so a missing requirement there
// is a failure, never a silent skip).
func require(t testing.TB, envVar string, ok bool, why string) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv(envVar) == "1" || os.Getenv("DSH_REQUIRE_ALL") == "1" {
		t.Fatalf("%s, and %s=1 requires it", why, envVar)
	}
	t.Skipf("%s (set %s=1 to make this a failure)", why, envVar)
}

var docker struct {
	once sync.Once
	err  string
}

// RequireDocker skips t unless a Docker engine answers, or fails it when
// DSH_REQUIRE_DOCKER=1.
func RequireDocker(t testing.TB) {
	t.Helper()
	docker.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, "docker", "version", "--format", "{{.Server.APIVersion}}").CombinedOutput()
		if err != nil {
			docker.err = "docker engine not reachable: " + strings.TrimSpace(string(out))
		}
	})
	require(t, "DSH_REQUIRE_DOCKER", docker.err == "", docker.err)
}

// RequireRoot skips t unless it runs as root, or fails it when
// DSH_REQUIRE_ROOT=1.
func RequireRoot(t testing.TB) {
	t.Helper()
	require(t, "DSH_REQUIRE_ROOT", os.Geteuid() == 0, "test needs root")
}

// RequireUserNS skips t unless this kernel lets the current user create user
// namespaces, or fails it when DSH_REQUIRE_USERNS=1.
func RequireUserNS(t testing.TB) {
	t.Helper()
	ok, why := userNSAvailable()
	require(t, "DSH_REQUIRE_USERNS", ok, why)
}

// RequireCgroups skips t unless cgroup controllers are writable here, or
// fails it when DSH_REQUIRE_CGROUPS=1.
func RequireCgroups(t testing.TB) {
	t.Helper()
	ok := writable("/sys/fs/cgroup/memory") || writable("/sys/fs/cgroup/cgroup.subtree_control")
	require(t, "DSH_REQUIRE_CGROUPS", ok, "no writable cgroup hierarchy")
}

// RequireCommand skips t unless name is on PATH, or fails it when
// DSH_REQUIRE_TOOLS=1.
func RequireCommand(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	require(t, "DSH_REQUIRE_TOOLS", err == nil, name+" is not installed")
	return p
}

func userNSAvailable() (bool, string) {
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && strings.TrimSpace(string(b)) == "0" {
		return false, "user namespaces are disabled (user.max_user_namespaces=0)"
	}
	if os.Geteuid() != 0 {
		if b, err := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && strings.TrimSpace(string(b)) == "0" {
			return false, "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone=0)"
		}
	}
	return true, ""
}

func writable(path string) bool {
	return exec.Command("test", "-w", path).Run() == nil
}

// DirNames lists the names in dir, sorted.
func DirNames(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
