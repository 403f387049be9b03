package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/internal/config"
)

// The driver list is the one place a driver is named: the default of
// sandbox.driver is its first entry, every entry can be probed and
// constructed, and the world filter check is added once per confining
// driver.
func TestDriverList(t *testing.T) {
	if def := config.Default().Sandbox.Driver; def != drivers[0].name {
		t.Errorf("config.Default() sandbox.driver = %q, want the first of the list, %q", def, drivers[0].name)
	}
	seen := map[string]bool{}
	for _, d := range drivers {
		if seen[d.name] {
			t.Errorf("driver %s listed twice", d.name)
		}
		seen[d.name] = true
		if d.newBackend == nil || d.probe == nil {
			t.Errorf("driver %s lacks a constructor or a probe", d.name)
		}
	}
	if !seen[driverNative] || !seen[driverDocker] || !seen[driverHost] {
		t.Errorf("drivers = %v, want native, docker and host", driverNames())
	}
	for _, d := range drivers {
		if d.name == driverHost && d.confines {
			t.Error("host is listed as confining")
		}
	}
}

// An unknown sandbox.driver fails configuration validation, naming every
// driver of the list.
func TestUnknownDriverFailsConfigValidation(t *testing.T) {
	file := filepath.Join(t.TempDir(), "dsh.yaml")
	if err := os.WriteFile(file, []byte("sandbox:\n  driver: vm\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := runDsh(t, "config", "show", "--config", file)
	want := `sandbox.driver: "vm" is not a sandbox driver of this build; use one of: ` + strings.Join(driverNames(), ", ")
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("dsh config show with sandbox.driver vm = %v, want an error containing %q", err, want)
	}
	// --driver sets the same key, so it is checked the same way.
	_, err = runDsh(t, "run", "--driver", "vm", "--", "true")
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("dsh run --driver vm = %v, want an error containing %q", err, want)
	}
}

// --driver's help and completion come from the list.
func TestDriverFlagAsksTheList(t *testing.T) {
	cmd := newRunCmd()
	if usage := cmd.Flags().Lookup("driver").Usage; !strings.Contains(usage, strings.Join(driverNames(), ", ")) {
		t.Errorf("--driver help = %q, want it to list %v", usage, driverNames())
	}
	complete, ok := cmd.GetFlagCompletionFunc("driver")
	if !ok {
		t.Fatal("--driver has no completion")
	}
	if got, _ := complete(cmd, nil, ""); strings.Join(got, " ") != strings.Join(driverNames(), " ") {
		t.Errorf("--driver completes to %v, want %v", got, driverNames())
	}
}
