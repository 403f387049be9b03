package docker

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestCheckStaticInit(t *testing.T) {
	if err := checkStaticInit("/bin/sh"); !errors.Is(err, ErrInitNotStatic) {
		t.Errorf("checkStaticInit(/bin/sh, dynamic) = %v, want ErrInitNotStatic", err)
	}
	script := filepath.Join(t.TempDir(), "init")
	os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755)
	if err := checkStaticInit(script); err == nil {
		t.Error("checkStaticInit(shell script) = nil, want an error")
	}
	if err := checkStaticInit(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("checkStaticInit(missing file) = nil, want an error")
	}
}

func TestCheckStaticInitAcceptsStaticBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds dsh")
	}
	if err := checkStaticInit(initBinary(t)); err != nil {
		t.Errorf("checkStaticInit(CGO_ENABLED=0 dsh) = %v, want nil", err)
	}
}

func TestNewRefusesRemoteEngine(t *testing.T) {
	t.Setenv("DOCKER_HOST", "tcp://127.0.0.1:1")
	_, err := New(&Options{InitPath: "/bin/true", entrypoint: []string{"true"}})
	if !errors.Is(err, ErrRemoteEngine) {
		t.Fatalf("New with DOCKER_HOST=tcp://… = %v, want ErrRemoteEngine", err)
	}
}
