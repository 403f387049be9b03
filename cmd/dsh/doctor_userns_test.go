package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeSys is a /proc/sys with kernel/apparmor_restrict_unprivileged_userns
// holding value ("" for a kernel without it).
func fakeSys(t *testing.T, value string) string {
	dir := t.TempDir()
	if value == "" {
		return dir
	}
	os.MkdirAll(filepath.Join(dir, "kernel"), 0o755)
	if err := os.WriteFile(filepath.Join(dir, "kernel", "apparmor_restrict_unprivileged_userns"), []byte(value+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestDoctorNamesTheAppArmorUsernsRestriction: with the sysctl at 1 and an
// unprivileged dsh, the native driver is not ready, its problem names
// kernel.apparmor_restrict_unprivileged_userns and its fix names the
// three ways out; at 0, without the file, or as root it does not block.
func TestDoctorNamesTheAppArmorUsernsRestriction(t *testing.T) {
	for _, c := range []struct {
		name   string
		value  string
		euid   int
		blocks bool
		detail string
	}{
		{"restricted", "1", 1000, true, "=1: AppArmor denies this unprivileged user"},
		{"allowed", "0", 1000, false, "=0: unprivileged user namespaces are allowed"},
		{"no such sysctl", "", 1000, false, "no kernel.apparmor_restrict_unprivileged_userns on this kernel"},
		{"root", "1", 0, false, "but dsh runs as root"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := driverReport{Name: "native", Confines: true, Ready: true}
			addUsernsCheck(&rep, fakeSys(t, c.value), c.euid)
			var got *check
			for i := range rep.Checks {
				if rep.Checks[i].Name == "apparmor userns" {
					got = &rep.Checks[i]
				}
			}
			if got == nil {
				t.Fatalf("no apparmor userns check in %+v", rep.Checks)
			}
			if got.OK == c.blocks || !strings.Contains(got.Detail, c.detail) {
				t.Errorf("check %+v, want ok=%v and %q", *got, !c.blocks, c.detail)
			}
			if rep.Ready == c.blocks {
				t.Errorf("ready = %v, want %v", rep.Ready, !c.blocks)
			}
			if !c.blocks {
				if rep.Problem != "" || rep.Fix != "" {
					t.Errorf("problem %q fix %q, want none", rep.Problem, rep.Fix)
				}
				return
			}
			if !strings.Contains(rep.Problem, "kernel.apparmor_restrict_unprivileged_userns=1") {
				t.Errorf("problem %q does not name the sysctl", rep.Problem)
			}
			for _, fix := range []string{"sudo dsh", "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0", "--driver docker"} {
				if !strings.Contains(rep.Fix, fix) {
					t.Errorf("fix %q does not say %q", rep.Fix, fix)
				}
			}
		})
	}
}

// TestDoctorPutsTheAppArmorCauseFirst: when the native probe already
// failed (its trial sandbox could not mount), the AppArmor setting leads
// the problem, as its cause, without repeating it.
func TestDoctorPutsTheAppArmorCauseFirst(t *testing.T) {
	rep := driverReport{Name: "native", Confines: true, Problem: "trial sandbox failed: mount: permission denied"}
	addUsernsCheck(&rep, fakeSys(t, "1"), 1000)
	if !strings.HasPrefix(rep.Problem, "AppArmor restricts unprivileged user namespaces") || !strings.Contains(rep.Problem, "trial sandbox failed") {
		t.Errorf("problem %q, want the AppArmor cause first and the trial's failure kept", rep.Problem)
	}
	rep = driverReport{Problem: "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1); allow them"}
	addUsernsCheck(&rep, fakeSys(t, "1"), 1000)
	if strings.Count(rep.Problem, "kernel.apparmor_restrict_unprivileged_userns") != 1 {
		t.Errorf("problem %q names the setting twice", rep.Problem)
	}
}

// TestDoctorPrintsTheAppArmorFix: the human report carries the fix line.
func TestDoctorPrintsTheAppArmorFix(t *testing.T) {
	rep := driverReport{Name: "native", Confines: true}
	addUsernsCheck(&rep, fakeSys(t, "1"), 1000)
	var b strings.Builder
	printDoctor(&b, &doctorReport{Driver: "native", Drivers: []driverReport{rep}})
	if !strings.Contains(b.String(), "fix: run dsh as root") || !strings.Contains(b.String(), "-- apparmor userns: kernel.apparmor_restrict_unprivileged_userns=1") {
		t.Errorf("doctor's text lacks the check or the fix:\n%s", b.String())
	}
}
