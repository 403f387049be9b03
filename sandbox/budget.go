package sandbox

import (
	"fmt"
	"math/bits"
	"os"
	"slices"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// The write budget (Spec.WriteLimit) and the sizes of a world's tmpfs
// mounts, computed here once for every driver (WriteBounds).
const (
	// DefaultWriteLimit is the write budget DefaultSpec gives a world: no
	// file of it grows past 4 GiB.
	DefaultWriteLimit = 4 << 30
	// MinWriteLimit is the smallest write budget: less leaves a world no
	// room for a compiler's or a package manager's temporary files.
	MinWriteLimit = 1 << 20
	// ShmBytes is the size of a world's /dev/shm before WriteBounds fits
	// it to the budget (docker's default).
	ShmBytes = 64 << 20
	// tmpfsBytesPerInode sizes a tmpfs's inode table (nr_inodes): one
	// inode per page it holds.
	tmpfsBytesPerInode = 4096
	// tmpfsInodeCost is the kernel memory an inode of a tmpfs costs with
	// its dentry and name (about 950 bytes measured for an empty file,
	// more with a long name). It is charged to the world's memory but not
	// to the mount's size=, so the budget counts it.
	tmpfsInodeCost = 1536
	// minTmpfsBytes and minTmpfsInodes are the least a sized tmpfs gets:
	// never size=0 or nr_inodes=0, which mean no limit.
	minTmpfsBytes  = 64 << 10
	minTmpfsInodes = 64
)

// MemoryReserve is the part of a memory limit that a world's tmpfs
// mounts never take: a quarter of the limit, at least 16 MiB, at most
// half of it. Tmpfs pages are charged to the world's memory but belong
// to no process, so an OOM kill frees none of them; were they to fill
// the limit, the OOM killer would run out of processes to kill and end
// at the world's init (the world is lost). The reserve is what the init
// (2 to 4 MiB charged to the world when idle, more while it relays
// output) and the world's processes run in: a process that outgrows it
// is OOM-killed, which frees its own memory, and the init lives on.
func MemoryReserve(limit int64) int64 {
	return min(max(limit/4, 16<<20), limit/2)
}

// WriteBounds are a Spec's writes bounded as every driver applies them.
type WriteBounds struct {
	// Mounts are the Spec's Mounts with every writable tmpfs sized
	// (size= and nr_inodes=).
	Mounts []specs.Mount
	// Shm is the world's /dev/shm, a tmpfs mount sized like the others.
	Shm specs.Mount
	// Rlimits are the Spec's Rlimits with RLIMIT_FSIZE (soft and hard) at
	// the WriteLimit, unless they hold a lower one.
	Rlimits []specs.POSIXRlimit
	// IPC are sysctls of the world's IPC namespace (kernel.shm*): System
	// V shared memory is the same memory as a tmpfs, and outlives its
	// processes, so its segments are removed with their last process
	// (shm_rmid_forced) and hold no more than SysVShmBytes, fitted into
	// the budget with the tmpfs mounts. Every driver sets them all.
	IPC map[string]string
	// SysVShmBytes is that bound.
	SysVShmBytes int64
	// TmpfsBytes is what the writable tmpfs mounts hold together at most,
	// 0 when one of them has no size (no budget to fit it to).
	TmpfsBytes int64
	// Budget is what they were fitted into, 0 for none, and By says what
	// set it ("the write limit", "the memory limit less its reserve").
	Budget int64
	By     string
}

// sysvIndex marks System V shared memory among the tmpfs sizes.
const sysvIndex = -2

// Tmpfs sizes of one writable tmpfs mount.
type tmpfsSize struct {
	i             int // index in Mounts, -1 for /dev/shm
	size, inodes  int64
	sized, inoSet bool
}

// Bounds returns the write bounds of s, which Validate accepted. The
// world's writable tmpfs mounts (those of s.Mounts that are not
// read-only, and /dev/shm of ShmBytes) and its System V shared memory
// (ShmBytes too) are fitted into a budget: the
// WriteLimit, and with a memory limit that limit less MemoryReserve,
// counting each inode's kernel memory (tmpfsInodeCost). Mounts that fit
// keep their sizes; otherwise every one is scaled down in proportion. A
// tmpfs without a size asks for the whole budget. unsized is
// memory-backed space of the world the driver cannot size (docker's
// /dev, which a root world can write): it comes off the budget first.
func Bounds(s *Spec, unsized int64) WriteBounds {
	b := WriteBounds{Mounts: slices.Clone(s.Mounts), Rlimits: fsizeRlimits(s.Rlimits, s.WriteLimit)}
	b.Shm = specs.Mount{Destination: "/dev/shm", Type: "tmpfs", Source: "tmpfs",
		Options: []string{"nosuid", "nodev", "noexec", "mode=1777", "size=" + strconv.Itoa(ShmBytes)}}
	var data, mem int64 // budgets of data bytes, and of memory; 0 is none
	if s.WriteLimit > 0 {
		data, b.By = s.WriteLimit, "the write limit"
	}
	if r := s.Resources; r != nil && r.Memory != nil && r.Memory.Limit != nil {
		l := *r.Memory.Limit
		mem = l - MemoryReserve(l)
	}
	if unsized > 0 {
		if data > 0 {
			data = max(data-unsized, minTmpfsBytes)
		}
		if mem > 0 {
			mem = max(mem-unsized, minTmpfsBytes)
		}
	}
	// The data that fits the memory budget with one inode per page.
	memData := mulDiv(mem, tmpfsBytesPerInode, tmpfsBytesPerInode+tmpfsInodeCost)
	if mem > 0 && (data == 0 || memData < data) {
		data, b.By = memData, "the memory limit less its reserve"
	}
	b.Budget = data

	var ts []tmpfsSize
	for i, m := range b.Mounts {
		if m.Type != "tmpfs" || slices.Contains(m.Options, "ro") {
			continue
		}
		ts = append(ts, parseTmpfsSize(i, m.Options))
	}
	ts = append(ts, parseTmpfsSize(-1, b.Shm.Options), tmpfsSize{i: sysvIndex, size: ShmBytes, sized: true})
	var total int64
	whole := true
	for k := range ts {
		if !ts[k].sized {
			if data == 0 {
				whole = false
				continue
			}
			ts[k].size, ts[k].sized = data, true
		}
		total = satAdd(total, ts[k].size)
	}
	for k := range ts {
		t := &ts[k]
		if !t.sized {
			continue
		}
		if data > 0 && total > data {
			t.size = max(mulDiv(t.size, data, total)&^(tmpfsBytesPerInode-1), minTmpfsBytes)
		}
		ino := max(t.size/tmpfsBytesPerInode, minTmpfsInodes)
		if !t.inoSet || t.inodes > ino {
			t.inodes = ino
		}
		if t.i == sysvIndex {
			b.SysVShmBytes = t.size
			pages := max(t.size/int64(os.Getpagesize()), 1)
			b.IPC = map[string]string{
				"kernel.shm_rmid_forced": "1",
				"kernel.shmall":          strconv.FormatInt(pages, 10),
				"kernel.shmmax":          strconv.FormatInt(t.size, 10),
				// Each segment is an inode: as many as the tmpfs would get.
				"kernel.shmmni": strconv.FormatInt(min(t.inodes, 4096), 10),
			}
			continue
		}
		opts := setOption(setOption(optionsOf(&b, t.i), "size", t.size), "nr_inodes", t.inodes)
		if t.i < 0 {
			b.Shm.Options = opts
		} else {
			b.Mounts[t.i].Options = opts
		}
		b.TmpfsBytes += t.size
	}
	if !whole {
		b.TmpfsBytes = 0
	}
	return b
}

func optionsOf(b *WriteBounds, i int) []string {
	if i < 0 {
		return b.Shm.Options
	}
	return b.Mounts[i].Options
}

// setOption returns opts with KEY=n in place of any KEY=.
func setOption(opts []string, key string, n int64) []string {
	out := make([]string, 0, len(opts)+1)
	for _, o := range opts {
		if !strings.HasPrefix(o, key+"=") {
			out = append(out, o)
		}
	}
	return append(out, key+"="+strconv.FormatInt(n, 10))
}

func parseTmpfsSize(i int, opts []string) tmpfsSize {
	t := tmpfsSize{i: i}
	for _, o := range opts {
		if v, ok := strings.CutPrefix(o, "size="); ok {
			t.size, _ = parseTmpfsNumber(v)
			t.sized = true
		}
		if v, ok := strings.CutPrefix(o, "nr_inodes="); ok {
			t.inodes, _ = parseTmpfsNumber(v)
			t.inoSet = true
		}
	}
	return t
}

// parseTmpfsNumber reads a tmpfs size= or nr_inodes= value: a whole
// number with an optional binary suffix k, m, g, t, p or e.
func parseTmpfsNumber(v string) (int64, error) {
	mult := int64(1)
	if n := len(v); n > 0 {
		if i := strings.IndexByte("kmgtpe", v[n-1]|0x20); i >= 0 && v[n-1] > '9' {
			mult, v = int64(1)<<(10*(i+1)), v[:n-1]
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q is not a positive whole number of bytes (with an optional k, m, g, t suffix)", v)
	}
	return n * mult, nil
}

// fsizeRlimits returns rl with RLIMIT_FSIZE at limit (soft and hard)
// unless rl holds a lower one; limit 0 leaves rl as it is.
func fsizeRlimits(rl []specs.POSIXRlimit, limit int64) []specs.POSIXRlimit {
	out := slices.Clone(rl)
	if limit <= 0 {
		return out
	}
	l := uint64(limit)
	for i, r := range out {
		if r.Type == "RLIMIT_FSIZE" {
			out[i].Hard, out[i].Soft = min(r.Hard, l), min(r.Soft, r.Hard, l)
			return out
		}
	}
	return append(out, specs.POSIXRlimit{Type: "RLIMIT_FSIZE", Hard: l, Soft: l})
}

// mulDiv is a*b/c for non-negative a, b and positive c, without overflow
// in the product (the result fits: b <= c here).
func mulDiv(a, b, c int64) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	q, _ := bits.Div64(hi, lo, uint64(c))
	return int64(q)
}

func satAdd(a, b int64) int64 {
	if a > (1<<62)-b {
		return 1 << 62
	}
	return a + b
}

// CheckWriteLimit checks a write budget in bytes. Its message names no
// field: the Spec and the configuration add their own.
func CheckWriteLimit(n int64) error {
	if n < MinWriteLimit {
		return fmt.Errorf("%d bytes is below the minimum write limit of %d MiB (a world needs room for temporary files); use a size of at least 1MiB", n, MinWriteLimit>>20)
	}
	return nil
}

// CheckWriteBudget checks the write budget of a Spec and the sizes of its
// tmpfs mounts: a WriteLimit of 0 (none) or at least MinWriteLimit, and
// every tmpfs size= and nr_inodes= a positive number (0 would mean no
// limit; a percentage of the host's memory is no bound WriteBounds can
// fit).
func CheckWriteBudget(s *Spec) error {
	if s.WriteLimit != 0 {
		if err := CheckWriteLimit(s.WriteLimit); err != nil {
			return &SpecError{Field: "WriteLimit", Msg: err.Error(), Fix: "or 0 for no write limit"}
		}
	}
	for i, m := range s.Mounts {
		if m.Type != "tmpfs" {
			continue
		}
		for _, o := range m.Options {
			for _, key := range []string{"size", "nr_inodes"} {
				if v, ok := strings.CutPrefix(o, key+"="); ok {
					if _, err := parseTmpfsNumber(v); err != nil {
						return &SpecError{Field: fmt.Sprintf("Mounts[%d].Options", i), Msg: fmt.Sprintf("%s: %s=%s: %v; 0 would mean no limit", m.Destination, key, v, err), Fix: "give it in bytes, such as size=536870912 or size=512m, or leave it out for a share of the write budget"}
					}
				}
			}
		}
	}
	return nil
}
