package sandbox

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// The rule, by path: system trees are refused with all they hold, the
// shared top-level directories only themselves.
func TestSystemLocation(t *testing.T) {
	for path, want := range map[string]string{
		"/": "/", "/etc": "/etc", "/etc/ssh": "/etc", "/usr": "/usr", "/usr/local": "/usr",
		"/bin": "/bin", "/sbin": "/sbin", "/lib": "/lib", "/lib64": "/lib64", "/libx32/x": "/libx32",
		"/boot": "/boot", "/sys/fs/cgroup": "/sys", "/proc/1": "/proc", "/dev/shm": "/dev",
		"/run": "/run", "/run/user/1000": "/run", "/var": "/var", "/var/lib": "/var/lib",
		"/var/log/app": "/var/log", "/var/lib/docker/overlay2": "/var/lib/docker", "/var/tmp": "/var/tmp",
		"/tmp": "/tmp", "/home": "/home", "/opt": "/opt", "/srv": "/srv",
		// Where projects live.
		"/var/tmp/job": "", "/tmp/build": "", "/srv/app": "", "/opt/app": "", "/home/u/proj": "",
		"/work": "", "/var/lib/jenkins/workspace/job": "", "/var/www/site": "", "/etcetera": "", "/usrdata": "",
	} {
		if got := systemLocation(path); got != want {
			t.Errorf("systemLocation(%s) = %q, want %q", path, got, want)
		}
	}
}

func TestCheckWorkspace(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "etc")
	if err := os.Symlink("/etc", link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	home := filepath.Join(dir, "home")
	os.Mkdir(home, 0o755)
	t.Setenv("HOME", home)
	for _, c := range []struct {
		path      string
		allowHome bool
		inError   string // "" when accepted
	}{
		{dir, false, ""},
		{filepath.Join(home), true, ""},
		{"relative/dir", false, "not an absolute path"},
		{"", false, "not an absolute path"},
		{filepath.Join(dir, "missing"), false, "no such file"},
		{file, false, "not a directory"},
		{"/etc", false, "system location /etc"},
		{link, false, "system location /etc"},
		{"/sys/fs/cgroup", false, "leave its cgroup"},
		{"/proc", false, "system location /proc"},
		{home, false, "AllowHomeWorkspace"},
		{"/root", false, "home directory"},
	} {
		real, err := CheckWorkspace(c.path, c.allowHome)
		var se *SpecError
		switch {
		case c.inError == "" && err != nil:
			t.Errorf("CheckWorkspace(%q, %v) = %v, want accepted", c.path, c.allowHome, err)
		case c.inError == "" && real != c.path:
			t.Errorf("CheckWorkspace(%q) = %q, want the real path %q", c.path, real, c.path)
		case c.inError != "" && (!errors.As(err, &se) || se.Field != "Workspace" || se.Fix == "" || !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), c.inError)):
			t.Errorf("CheckWorkspace(%q, %v) = %v, want a Workspace SpecError with a fix, mentioning %q", c.path, c.allowHome, err, c.inError)
		}
	}
}

// dsh's native state (every world's root mount point) is never a
// world's workspace or writable bind source, nor inside one, nor around
// one: the /tmp fallback of any uid, however the path is spelt. Read-only,
// it shows only empty directories, and may be bound.
func TestStateNeverInAWorld(t *testing.T) {
	state := fmt.Sprintf("/tmp/dsh-native-t%d", os.Getpid())
	proj := filepath.Join(state, "proj")
	if err := os.MkdirAll(proj, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(state) })
	link := filepath.Join(t.TempDir(), "proj")
	if err := os.Symlink(proj, link); err != nil {
		t.Fatal(err)
	}
	unclean := strings.Replace(proj, "/tmp/", "/tmp/./", 1) + "/"
	for _, ws := range []string{state, proj, link, unclean} {
		_, err := CheckWorkspace(ws, false)
		var se *SpecError
		if !errors.As(err, &se) || se.Field != "Workspace" || !strings.Contains(err.Error(), "dsh's own state") {
			t.Errorf("CheckWorkspace(%q) = %v, want refused as dsh's own state", ws, err)
		}
	}
	ws := t.TempDir()
	for _, src := range []string{state, proj, link, unclean} {
		arg := src + ":/mnt/x:rw"
		if _, err := UserBind(arg, ws); err == nil || !strings.Contains(err.Error(), "dsh's own state") {
			t.Errorf("UserBind(%q) = %v, want refused as dsh's own state", arg, err)
		}
		spec := DefaultSpec(ws)
		spec.Mounts = append(spec.Mounts, specs.Mount{Type: "bind", Source: src, Destination: "/mnt/x", Options: []string{"rbind"}})
		if _, err := Validate(spec); err == nil || !strings.Contains(err.Error(), "dsh's own state") {
			t.Errorf("Validate(a writable Spec bind of %s) = %v, want refused as dsh's own state", src, err)
		}
		spec.Mounts[len(spec.Mounts)-1].Options = []string{"rbind", "ro"}
		if _, err := Validate(spec); err != nil {
			t.Errorf("Validate(a read-only Spec bind of %s) = %v, want accepted", src, err)
		}
	}
	for _, src := range []string{state, "/tmp", "/run", "/"} {
		for _, mode := range []string{"", ":ro"} {
			if _, err := UserBind(src+":/mnt/x"+mode, ws); err != nil {
				t.Errorf("UserBind(%q) read-only = %v, want accepted", src+":/mnt/x"+mode, err)
			}
		}
	}
}

func TestCheckResources(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	u64 := func(v uint64) *uint64 { return &v }
	cpu := func(q int64, p *uint64) *specs.LinuxResources {
		return &specs.LinuxResources{CPU: &specs.LinuxCPU{Quota: &q, Period: p}}
	}
	nan := math.NaN()
	host := int64(HostCPUs())
	for _, c := range []struct {
		name  string
		r     *specs.LinuxResources
		field string // "" when accepted
	}{
		{"none", nil, ""},
		{"default", DefaultSpec("/w").Resources, ""},
		{"empty controllers", &specs.LinuxResources{Memory: &specs.LinuxMemory{}, Pids: &specs.LinuxPids{}, CPU: &specs.LinuxCPU{}}, ""},
		{"minimums", &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: i64(MinMemoryBytes)}, Pids: &specs.LinuxPids{Limit: i64(1)}, CPU: &specs.LinuxCPU{Quota: i64(MinCPUQuota)}}, ""},
		{"all the host's CPUs", cpu(host*DefaultCPUPeriod, nil), ""},
		//lint:ignore SA4012 a NaN CPU count converted as a caller would convert it
		{"quota from NaN", cpu(int64(nan*DefaultCPUPeriod), nil), "Resources.CPU.Quota"},
		{"quota zero", cpu(0, nil), "Resources.CPU.Quota"},
		{"quota negative", cpu(-1, nil), "Resources.CPU.Quota"},
		{"quota below the kernel's", cpu(999, nil), "Resources.CPU.Quota"},
		{"more than the host's CPUs", cpu((host+1)*DefaultCPUPeriod, nil), "Resources.CPU.Quota"},
		{"more than the host's CPUs, short period", cpu(host*2000, u64(1000)), "Resources.CPU.Quota"},
		{"period zero", cpu(50000, u64(0)), "Resources.CPU.Period"},
		{"period above the kernel's", cpu(50000, u64(2000000)), "Resources.CPU.Period"},
		{"memory zero", &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: i64(0)}}, "Resources.Memory.Limit"},
		{"memory below the minimum", &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: i64(MinMemoryBytes - 1)}}, "Resources.Memory.Limit"},
		{"pids zero", &specs.LinuxResources{Pids: &specs.LinuxPids{Limit: i64(0)}}, "Resources.Pids.Limit"},
		{"pids negative", &specs.LinuxResources{Pids: &specs.LinuxPids{Limit: i64(-1)}}, "Resources.Pids.Limit"},
		{"pids above the kernel's", &specs.LinuxResources{Pids: &specs.LinuxPids{Limit: i64(MaxPids + 1)}}, "Resources.Pids.Limit"},
	} {
		err := CheckResources(c.r)
		var se *SpecError
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%s: CheckResources = %v, want nil", c.name, err)
		case c.field != "" && (!errors.As(err, &se) || se.Field != c.field || se.Fix == ""):
			t.Errorf("%s: CheckResources = %v, want a SpecError on %s with a fix", c.name, err, c.field)
		}
	}
}

func TestCheckCPUs(t *testing.T) {
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, -1, 0.009, float64(HostCPUs()) + 0.01} {
		if CheckCPUs(v) == nil {
			t.Errorf("CheckCPUs(%v) = nil, want an error", v)
		}
	}
	for _, v := range []float64{MinCPUs, 1, float64(HostCPUs())} {
		if err := CheckCPUs(v); err != nil {
			t.Errorf("CheckCPUs(%v) = %v, want nil", v, err)
		}
		q, p := CPUQuota(v)
		if CheckResources(&specs.LinuxResources{CPU: &specs.LinuxCPU{Quota: &q, Period: &p}}) != nil {
			t.Errorf("CPUQuota(%v) = %d/%d, which CheckResources refuses", v, q, p)
		}
	}
}

func TestMountsAndRlimitsChecked(t *testing.T) {
	ws := t.TempDir()
	for _, tc := range []struct {
		name  string
		edit  func(*Spec)
		field string // "" = valid
	}{
		{"default", func(*Spec) {}, ""},
		{"bind with every flag", func(s *Spec) {
			s.Mounts = append(s.Mounts, specs.Mount{Type: "bind", Source: ws, Destination: "/data", Options: []string{"ro", "nosuid", "nodev", "noexec", "rbind"}})
		}, ""},
		{"relative destination", func(s *Spec) {
			s.Mounts = append(s.Mounts, specs.Mount{Type: "tmpfs", Destination: "data"})
		}, "Mounts[1]"},
		{"relative bind source", func(s *Spec) {
			s.Mounts = append(s.Mounts, specs.Mount{Type: "bind", Source: "src", Destination: "/data"})
		}, "Mounts[1]"},
		{"unknown type", func(s *Spec) {
			s.Mounts = append(s.Mounts, specs.Mount{Type: "overlay", Destination: "/data"})
		}, "Mounts[1]"},
		{"unknown option", func(s *Spec) {
			s.Mounts[0].Options = append(s.Mounts[0].Options, "suid")
		}, "Mounts[0].Options"},
		{"unknown rlimit", func(s *Spec) {
			s.Rlimits = append(s.Rlimits, specs.POSIXRlimit{Type: "RLIMIT_NOPE"})
		}, "Rlimits[1]"},
	} {
		s := DefaultSpec(ws)
		tc.edit(s)
		_, err := Validate(s)
		var se *SpecError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: %v, want valid", tc.name, err)
		case tc.field != "" && (!errors.As(err, &se) || se.Field != tc.field):
			t.Errorf("%s: %v, want an error naming Spec.%s", tc.name, err, tc.field)
		}
	}
}

func TestParseMountOptions(t *testing.T) {
	got, err := ParseMountOptions([]string{"nosuid", "rw", "size=1m", "noexec", "mode=1777"})
	want := MountOptions{NoSuid: true, NoExec: true, Data: []string{"size=1m", "mode=1777"}}
	if err != nil || !cmp.Equal(got, want) {
		t.Errorf("ParseMountOptions = %+v, %v; want %+v", got, err, want)
	}
}
