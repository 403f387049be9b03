package sandbox

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// option returns the value of KEY= in opts, or -1.
func option(t *testing.T, opts []string, key string) int64 {
	t.Helper()
	for _, o := range opts {
		if v, ok := strings.CutPrefix(o, key+"="); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("%s=%s is not a number of bytes: %v", key, v, err)
			}
			return n
		}
	}
	return -1
}

func withMemory(s *Spec, n int64) *Spec {
	s.Resources.Memory = &specs.LinuxMemory{Limit: &n}
	return s
}

func fsize(t *testing.T, rl []specs.POSIXRlimit) (soft, hard uint64) {
	t.Helper()
	for _, r := range rl {
		if r.Type == "RLIMIT_FSIZE" {
			return r.Soft, r.Hard
		}
	}
	t.Fatalf("no RLIMIT_FSIZE in %v", rl)
	return 0, 0
}

// The default world's mounts fit its default budget: their sizes stay.
func TestBoundsDefaultKeepsSizes(t *testing.T) {
	b := Bounds(DefaultSpec("/srv/app"), 0)
	if got := option(t, b.Mounts[0].Options, "size"); got != 512<<20 {
		t.Errorf("/tmp size %d, want 512 MiB", got)
	}
	if got := option(t, b.Shm.Options, "size"); got != ShmBytes {
		t.Errorf("/dev/shm size %d, want %d", got, ShmBytes)
	}
	if got := option(t, b.Mounts[0].Options, "nr_inodes"); got != (512<<20)/4096 {
		t.Errorf("/tmp nr_inodes %d, want one per page", got)
	}
	if soft, hard := fsize(t, b.Rlimits); soft != DefaultWriteLimit || hard != DefaultWriteLimit {
		t.Errorf("RLIMIT_FSIZE %d/%d, want %d", soft, hard, DefaultWriteLimit)
	}
	if b.TmpfsBytes != 512<<20+ShmBytes {
		t.Errorf("TmpfsBytes %d", b.TmpfsBytes)
	}
}

// Under a small memory limit the tmpfs mounts, with their inodes' kernel
// memory, fit the limit less the reserve, in proportion, never size 0.
func TestBoundsFitMemoryLimit(t *testing.T) {
	for _, mem := range []int64{MinMemoryBytes, 64 << 20, 256 << 20, 1 << 30} {
		b := Bounds(withMemory(DefaultSpec("/srv/app"), mem), 0)
		tmp, shm := option(t, b.Mounts[0].Options, "size"), option(t, b.Shm.Options, "size")
		ti, si := option(t, b.Mounts[0].Options, "nr_inodes"), option(t, b.Shm.Options, "nr_inodes")
		if tmp <= 0 || shm <= 0 || ti <= 0 || si <= 0 {
			t.Fatalf("memory %d: a size or inode count is not positive: /tmp %d/%d, /dev/shm %d/%d", mem, tmp, ti, shm, si)
		}
		if b.SysVShmBytes <= 0 || b.IPC["kernel.shm_rmid_forced"] != "1" || b.IPC["kernel.shmmax"] != strconv.FormatInt(b.SysVShmBytes, 10) {
			t.Fatalf("memory %d: System V shared memory unbounded: %d, %v", mem, b.SysVShmBytes, b.IPC)
		}
		charged := tmp + shm + b.SysVShmBytes + (ti+si)*tmpfsInodeCost
		if room := mem - MemoryReserve(mem); charged > room {
			t.Errorf("memory %d MiB: tmpfs may take %d bytes with inodes, above %d (the limit less the reserve)", mem>>20, charged, room)
		}
		if mem <= 256<<20 {
			// Scaled in proportion: /tmp asked for 8 times /dev/shm.
			if r := float64(tmp) / float64(shm); r < 7.9 || r > 8.1 {
				t.Errorf("memory %d MiB: /tmp %d and /dev/shm %d are not in proportion 8:1", mem>>20, tmp, shm)
			}
		}
	}
	if r := MemoryReserve(64 << 20); r != 16<<20 {
		t.Errorf("reserve of 64 MiB is %d, want 16 MiB", r)
	}
	if r := MemoryReserve(MinMemoryBytes); r != MinMemoryBytes/2 {
		t.Errorf("reserve of the minimum limit is %d, want half of it", r)
	}
}

// The write limit bounds the tmpfs mounts together and every file.
func TestBoundsWriteLimit(t *testing.T) {
	s := DefaultSpec("/srv/app")
	s.WriteLimit = 8 << 20
	b := Bounds(s, 0)
	if total := option(t, b.Mounts[0].Options, "size") + option(t, b.Shm.Options, "size"); total > 8<<20 || b.TmpfsBytes != total {
		t.Errorf("tmpfs together %d (TmpfsBytes %d), want at most 8 MiB", total, b.TmpfsBytes)
	}
	if b.By != "the write limit" || b.Budget != 8<<20 {
		t.Errorf("budget %d by %q", b.Budget, b.By)
	}
	if soft, hard := fsize(t, b.Rlimits); soft != 8<<20 || hard != 8<<20 {
		t.Errorf("RLIMIT_FSIZE %d/%d", soft, hard)
	}
	// A lower RLIMIT_FSIZE of the Spec stays; a higher one is lowered.
	s.Rlimits = append(s.Rlimits, specs.POSIXRlimit{Type: "RLIMIT_FSIZE", Soft: 1 << 20, Hard: 64 << 20})
	if soft, hard := fsize(t, Bounds(s, 0).Rlimits); soft != 1<<20 || hard != 8<<20 {
		t.Errorf("RLIMIT_FSIZE %d/%d, want 1 MiB soft, 8 MiB hard", soft, hard)
	}
	if len(s.Rlimits) != 2 || s.Rlimits[1].Hard != 64<<20 {
		t.Errorf("Bounds changed the Spec's rlimits: %v", s.Rlimits)
	}
	// No write limit: no RLIMIT_FSIZE.
	s = DefaultSpec("/srv/app")
	s.WriteLimit = 0
	for _, r := range Bounds(s, 0).Rlimits {
		if r.Type == "RLIMIT_FSIZE" {
			t.Errorf("RLIMIT_FSIZE %v with no write limit", r)
		}
	}
}

// A tmpfs without a size gets a share of the budget; with no budget at
// all it stays as the kernel sizes it, and TmpfsBytes says it is not
// bounded. Read-only tmpfs mounts are not writable: untouched. Space the
// driver cannot size comes off the budget.
func TestBoundsUnsizedAndReadOnly(t *testing.T) {
	s := DefaultSpec("/srv/app")
	s.WriteLimit = 0
	s.Mounts = append(s.Mounts,
		specs.Mount{Destination: "/scratch", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid"}},
		specs.Mount{Destination: "/empty", Type: "tmpfs", Source: "tmpfs", Options: []string{"ro", "size=4096"}})
	withMemory(s, 64<<20)
	b := Bounds(s, 0)
	if got := option(t, b.Mounts[1].Options, "size"); got <= 0 {
		t.Errorf("/scratch got no size: %v", b.Mounts[1].Options)
	}
	if strings.Join(b.Mounts[2].Options, ",") != "ro,size=4096" {
		t.Errorf("a read-only tmpfs changed: %v", b.Mounts[2].Options)
	}
	if s.Mounts[1].Options[0] != "nosuid" || len(s.Mounts[1].Options) != 1 {
		t.Errorf("Bounds changed the Spec's mounts: %v", s.Mounts[1].Options)
	}
	with := Bounds(s, 16<<20)
	if with.Budget >= b.Budget {
		t.Errorf("unsized space did not come off the budget: %d, %d", with.Budget, b.Budget)
	}
	s.Resources = nil
	b = Bounds(s, 0)
	if got := option(t, b.Mounts[1].Options, "size"); got != -1 || b.TmpfsBytes != 0 {
		t.Errorf("no budget: /scratch size %d, TmpfsBytes %d; want no size and 0", got, b.TmpfsBytes)
	}
	if got := option(t, b.Mounts[0].Options, "size"); got != 512<<20 {
		t.Errorf("no budget: /tmp size %d, want its own 512 MiB", got)
	}
}

func TestValidateWriteBudget(t *testing.T) {
	for name, mutate := range map[string]func(*Spec){
		"write limit below minimum": func(s *Spec) { s.WriteLimit = 4096 },
		"negative write limit":      func(s *Spec) { s.WriteLimit = -1 },
		"size=0":                    func(s *Spec) { s.Mounts[0].Options = []string{"size=0"} },
		"percent size":              func(s *Spec) { s.Mounts[0].Options = []string{"size=50%"} },
		"nr_inodes=0":               func(s *Spec) { s.Mounts[0].Options = []string{"size=1m", "nr_inodes=0"} },
	} {
		s := DefaultSpec(t.TempDir())
		mutate(s)
		_, err := Validate(s)
		var se *SpecError
		if !errors.As(err, &se) || !strings.HasPrefix(se.Field, "WriteLimit") && !strings.HasPrefix(se.Field, "Mounts[0]") {
			t.Errorf("%s: Validate said %v, want a SpecError naming the field", name, err)
		}
	}
	s := DefaultSpec(t.TempDir())
	s.Mounts[0].Options = []string{"size=512m", "nr_inodes=1k"}
	if _, err := Validate(s); err != nil {
		t.Errorf("size=512m,nr_inodes=1k refused: %v", err)
	}
	if got := option(t, Bounds(s, 0).Mounts[0].Options, "nr_inodes"); got != 1024 {
		t.Errorf("a lower nr_inodes of the Spec became %d", got)
	}
}

// The quota probe names the file system and says why no quota holds on
// one that has none.
func TestProbeProjectQuota(t *testing.T) {
	q := ProbeProjectQuota("/proc")
	if q.On || q.FS != "proc" || q.Mount != "/proc" || !strings.Contains(q.Why, "no project quotas") {
		t.Errorf("/proc: %+v, want off, proc at /proc, and why", q)
	}
	q = ProbeProjectQuota(t.TempDir())
	if q.FS == "" || q.Mount == "" || q.Why == "" {
		t.Errorf("a temporary directory: %+v, want its file system, mount and why", q)
	}
	if q = ProbeProjectQuota("/nonexistent-dsh"); q.On || !strings.Contains(q.Why, "/nonexistent-dsh") {
		t.Errorf("a missing path: %+v", q)
	}
}
