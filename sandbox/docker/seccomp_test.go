package docker

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// The profile allows ioctl only through ioctlRules, and those match every
// request except TIOCSTI and TIOCLINUX, judged by the low 32 bits the
// kernel reads, whatever the bits above.
func TestProfileRefusesOnlyDeniedIoctls(t *testing.T) {
	p, err := defaultProfile()
	if err != nil {
		t.Fatal(err)
	}
	var prof struct {
		Syscalls []struct {
			Names  []string                 `json:"names"`
			Action specs.LinuxSeccompAction `json:"action"`
			Args   []specs.LinuxSeccompArg  `json:"args"`
		} `json:"syscalls"`
	}
	if err := json.Unmarshal([]byte(p), &prof); err != nil {
		t.Fatal(err)
	}
	var rules [][]specs.LinuxSeccompArg // the allow rules of ioctl
	for _, sc := range prof.Syscalls {
		for _, n := range sc.Names {
			if n == "ioctl" && sc.Action == specs.ActAllow {
				rules = append(rules, sc.Args)
			}
		}
	}
	// The rules as runc hands them to libseccomp: any rule matching allows;
	// a rule's comparisons must all hold.
	allowed := func(req uint64) bool {
		for _, args := range rules {
			all := true
			for _, a := range args {
				if a.Index != 1 || a.Op != specs.OpMaskedEqual {
					t.Fatalf("unexpected ioctl condition %+v", a)
				}
				all = all && req&a.Value == a.ValueTwo
			}
			if all {
				return true
			}
		}
		return false
	}
	highs := []uint64{0, 1 << 32, 0xffffffff << 32}
	for _, req := range []uint64{unix.TIOCSTI, unix.TIOCLINUX} {
		for _, hi := range highs {
			if allowed(hi | req) {
				t.Errorf("ioctl request %#x is allowed", hi|req)
			}
		}
	}
	try := []uint64{unix.TCGETS, unix.TCSETS, unix.TIOCGWINSZ, unix.TIOCSWINSZ, unix.TIOCGPGRP, unix.TIOCINQ, unix.TIOCGPTPEER, 0, 0xffffffff}
	for d := uint64(1); d < 64; d++ {
		try = append(try, unix.TIOCSTI-d, unix.TIOCSTI+d, unix.TIOCLINUX+d)
	}
	for range 100000 {
		try = append(try, uint64(rand.Uint32()))
	}
	for _, req := range try {
		if req == unix.TIOCSTI || req == unix.TIOCLINUX {
			continue
		}
		for _, hi := range highs {
			if !allowed(hi | req) {
				t.Fatalf("ioctl request %#x is refused", hi|req)
			}
		}
	}
}
