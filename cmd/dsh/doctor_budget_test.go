package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// doctor says which write bounds hold: the file size limit as
// configured, the tmpfs sizes and what fitted them, no overlay, and the
// project quota with its reason.
func TestDoctorReportsTheWriteBudget(t *testing.T) {
	for _, c := range []struct {
		memory, write string
		want          map[string]string // check name: detail part; "!" prefix: not ok
	}{
		{"64MiB", "8MiB", map[string]string{
			"file size": "past 8 MiB (RLIMIT_FSIZE", "tmpfs": "within 8 MiB (the write limit)",
			"overlay upper": "!read-write", "workspace project quota": "!"}},
		{"64MiB", "unlimited", map[string]string{
			"file size": "!unlimited", "tmpfs": "(the memory limit less its reserve), so filling them fails with ENOSPC"}},
		{"2GiB", "4GiB", map[string]string{"tmpfs": "/tmp 512 MiB, /dev/shm 64 MiB, System V shared memory 64 MiB (removed with its last process; refused in an unprivileged native world): 640 MiB together"}},
	} {
		t.Setenv("DSH_SANDBOX_LIMITS_MEMORY", c.memory)
		t.Setenv("DSH_SANDBOX_LIMITS_WRITE", c.write)
		out, _ := runDsh(t, "doctor", "--json")
		var rep doctorReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("dsh doctor --json is not JSON: %v\n%s", err, out)
		}
		got := map[string]check{}
		for _, ch := range rep.WriteBudget {
			got[ch.Name] = ch
		}
		for name, want := range c.want {
			ch, ok := got[name]
			wantOK := !strings.HasPrefix(want, "!")
			want = strings.TrimPrefix(want, "!")
			if !ok || ch.OK != wantOK || !strings.Contains(ch.Detail, want) {
				t.Errorf("memory %s, write %s: %s = %+v (present %v), want ok %v and %q", c.memory, c.write, name, ch, ok, wantOK, want)
			}
		}
	}
	out, _ := runDsh(t, "doctor")
	if !strings.Contains(out, "WRITE BUDGET\n") || !strings.Contains(out, "workspace project quota: ") {
		t.Errorf("dsh doctor prints no write budget:\n%s", out)
	}
}
