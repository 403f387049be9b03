package docker

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/mount"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/dsh-dev/dsh/sandbox"
)

func TestContainerConfigHardening(t *testing.T) {
	ws := t.TempDir()
	spec := sandbox.DefaultSpec(ws)
	plan := &containerPlan{Name: "dsh-x", Image: spec.Image, User: "dsh", InitPath: "/bin/dsh",
		Entrypoint: []string{initMountPath, initArg}}
	cfg, host, err := containerConfig(spec, plan)
	if err != nil {
		t.Fatal(err)
	}
	if !host.ReadonlyRootfs {
		t.Error("ReadonlyRootfs = false, want true")
	}
	if !slices.Equal(host.CapDrop, []string{"ALL"}) || len(host.CapAdd) != 0 {
		t.Errorf("CapDrop = %v, CapAdd = %v; want [ALL], []", host.CapDrop, host.CapAdd)
	}
	if !slices.Contains(host.SecurityOpt, "no-new-privileges:true") {
		t.Errorf("SecurityOpt = %v, want no-new-privileges:true", host.SecurityOpt)
	}
	for _, o := range host.SecurityOpt {
		if strings.Contains(o, "unconfined") {
			t.Errorf("SecurityOpt %q disables a confinement", o)
		}
	}
	if host.Privileged {
		t.Error("Privileged = true")
	}
	if host.Memory != sandbox.DefaultMemoryBytes || host.MemorySwap != host.Memory {
		t.Errorf("Memory = %d, MemorySwap = %d; want %d for both", host.Memory, host.MemorySwap, sandbox.DefaultMemoryBytes)
	}
	if host.PidsLimit == nil || *host.PidsLimit != sandbox.DefaultPids {
		t.Errorf("PidsLimit = %v, want %d", host.PidsLimit, sandbox.DefaultPids)
	}
	// 2 CPUs, or every CPU of a smaller host.
	if q := int64(min(2, sandbox.HostCPUs())) * 100000; host.CPUQuota != q || host.CPUPeriod != 100000 {
		t.Errorf("CPUQuota/CPUPeriod = %d/%d, want %d/100000", host.CPUQuota, host.CPUPeriod, q)
	}
	if got := host.Tmpfs["/tmp"]; !strings.Contains(got, "size=536870912") || !strings.Contains(got, "exec") {
		t.Errorf("Tmpfs[/tmp] = %q, want the Spec's size and exec", got)
	}
	if host.NetworkMode != "none" || !cfg.NetworkDisabled {
		t.Errorf("NetworkMode = %q, NetworkDisabled = %v; want none, true", host.NetworkMode, cfg.NetworkDisabled)
	}
	if host.LogConfig.Type != "none" {
		t.Errorf("LogConfig.Type = %q, want none (the attach stream must not be logged)", host.LogConfig.Type)
	}
	if !cfg.OpenStdin || !cfg.StdinOnce || cfg.Tty {
		t.Errorf("OpenStdin/StdinOnce/Tty = %v/%v/%v, want true/true/false", cfg.OpenStdin, cfg.StdinOnce, cfg.Tty)
	}
	if cfg.WorkingDir != ws || cfg.User != "dsh" || cfg.Hostname != "dsh" {
		t.Errorf("WorkingDir, User, Hostname = %q, %q, %q", cfg.WorkingDir, cfg.User, cfg.Hostname)
	}
	if !slices.Equal(cfg.Entrypoint, []string{initMountPath, initArg}) {
		t.Errorf("Entrypoint = %v", cfg.Entrypoint)
	}
	want := []mount.Mount{
		{Type: mount.TypeBind, Source: "/bin/dsh", Target: initMountPath, ReadOnly: true},
		{Type: mount.TypeBind, Source: ws, Target: ws},
	}
	for _, m := range want {
		if !slices.ContainsFunc(host.Mounts, func(g mount.Mount) bool { return g == m }) {
			t.Errorf("Mounts = %+v, missing %+v", host.Mounts, m)
		}
	}
	for _, m := range host.Mounts {
		if strings.Contains(m.Source, "docker.sock") {
			t.Errorf("docker socket mounted: %+v", m)
		}
	}
	if len(host.Ulimits) != 2 || host.Ulimits[0].Name != "nofile" || host.Ulimits[0].Hard > 65536 || host.Ulimits[0].Hard == 0 {
		t.Errorf("Ulimits = %+v, want nofile <= 65536 and fsize", host.Ulimits)
	}
	// The write budget: no file past it, /dev/shm and System V shared
	// memory sized and bounded like /tmp (sandbox.Bounds).
	if u := host.Ulimits[len(host.Ulimits)-1]; u.Name != "fsize" || u.Soft != sandbox.DefaultWriteLimit || u.Hard != sandbox.DefaultWriteLimit {
		t.Errorf("Ulimits = %+v, want fsize at the write limit", host.Ulimits)
	}
	if shm := host.Tmpfs["/dev/shm"]; !strings.Contains(shm, "size=67108864") || !strings.Contains(shm, "nr_inodes=16384") || !strings.Contains(shm, "noexec") {
		t.Errorf("Tmpfs[/dev/shm] = %q, want a sized noexec tmpfs", shm)
	}
	if host.Sysctls["kernel.shm_rmid_forced"] != "1" || host.Sysctls["kernel.shmmax"] != "67108864" {
		t.Errorf("Sysctls = %v, want System V shared memory bounded and removed with its processes", host.Sysctls)
	}
}

func TestContainerConfigMasksInsideWorkspace(t *testing.T) {
	home := t.TempDir()
	os.Mkdir(filepath.Join(home, ".ssh"), 0o700)
	os.WriteFile(filepath.Join(home, ".netrc"), []byte("machine x"), 0o600)
	spec := sandbox.DefaultSpec(home) // the workspace is the home directory
	_, host, err := containerConfig(spec, &containerPlan{Image: "i", InitPath: "/d", Home: home})
	if err != nil {
		t.Fatal(err)
	}
	wantDir := mount.Mount{Type: mount.TypeTmpfs, Target: filepath.Join(home, ".ssh"), ReadOnly: true,
		TmpfsOptions: &mount.TmpfsOptions{SizeBytes: 4096, Mode: 0o500}}
	wantFile := mount.Mount{Type: mount.TypeBind, Source: os.DevNull, Target: filepath.Join(home, ".netrc"), ReadOnly: true}
	var gotDir, gotFile bool
	for _, m := range host.Mounts {
		if m.Target == wantDir.Target {
			gotDir = m.Type == wantDir.Type && m.ReadOnly && m.TmpfsOptions != nil && m.TmpfsOptions.SizeBytes == 4096 && m.TmpfsOptions.Mode == 0o500
		}
		if m == wantFile {
			gotFile = true
		}
		if m.Target == filepath.Join(home, ".aws") {
			t.Errorf("mask mounted over a path that does not exist: %+v", m)
		}
	}
	if !gotDir || !gotFile {
		t.Errorf("Mounts = %+v; want %+v and %+v", host.Mounts, wantDir, wantFile)
	}
}

func TestContainerConfigRejectsWhatItCannotHonour(t *testing.T) {
	for _, tc := range []struct {
		name   string
		modify func(*sandbox.Spec)
		field  string
	}{
		{"relative workspace", func(s *sandbox.Spec) { s.Workspace = "work" }, "Workspace"},
		{"no image", func(s *sandbox.Spec) { s.Image = "" }, "Image"},
		{"block io", func(s *sandbox.Spec) { s.Resources.BlockIO = &specs.LinuxBlockIO{} }, "Resources"},
		{"overlay mount", func(s *sandbox.Spec) {
			s.Mounts = append(s.Mounts, specs.Mount{Type: "overlay", Destination: "/x"})
		}, "Mounts[1]"},
		{"zero pids", func(s *sandbox.Spec) { n := int64(0); s.Resources.Pids.Limit = &n }, "Resources.Pids.Limit"},
	} {
		spec := sandbox.DefaultSpec("/w")
		tc.modify(spec)
		_, _, err := containerConfig(spec, &containerPlan{Image: spec.Image, InitPath: "/d"})
		if err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: containerConfig error = %v, want one naming %s", tc.name, err, tc.field)
		}
	}
}

func TestContainerConfigWorkspaceAtTmpKeepsWorkspace(t *testing.T) {
	spec := sandbox.DefaultSpec("/tmp")
	_, host, err := containerConfig(spec, &containerPlan{Image: spec.Image, InitPath: "/d"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := host.Tmpfs["/tmp"]; ok {
		t.Errorf("Tmpfs = %v: a tmpfs over the workspace /tmp would hide it", host.Tmpfs)
	}
	if !slices.ContainsFunc(host.Mounts, func(m mount.Mount) bool { return m.Target == "/tmp" && m.Source == "/tmp" && !m.ReadOnly }) {
		t.Errorf("Mounts = %+v, want the workspace /tmp bound read-write", host.Mounts)
	}
}
