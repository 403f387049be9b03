package trust

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestStoreRoundTripAndChange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cfg", "dsh", FileName)
	s, err := Load(path)
	if err != nil || len(s.Entries) != 0 {
		t.Fatalf("Load(missing) = %v, %v; want an empty store", s, err)
	}
	file := "/proj/dsh.yaml"
	data := []byte("sandbox:\n  limits:\n    off: true\n")
	if st := s.State(file, data); st != Unknown {
		t.Errorf("State before Add = %v, want untrusted", st)
	}
	s.Add(file, data, time.Now())
	if err := s.Save(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("store mode = %v, %v; want 0600", fi.Mode(), err)
	}
	if di, _ := os.Stat(filepath.Dir(path)); di.Mode().Perm() != 0o700 {
		t.Errorf("store directory mode = %v, want 0700", di.Mode())
	}
	s, err = Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if st := s.State(file, data); st != Trusted {
		t.Errorf("State after Save and Load = %v, want trusted", st)
	}
	if st := s.State(file, append(data, '#')); st != Changed {
		t.Errorf("State of edited content = %v, want changed since trusted", st)
	}
	if st := s.State("/other/dsh.yaml", data); st != Unknown {
		t.Errorf("State of the same content at another path = %v, want untrusted", st)
	}
	if !s.Revoke(file) || s.Revoke(file) {
		t.Error("Revoke: want true once, then false")
	}
	if st := s.State(file, data); st != Unknown {
		t.Errorf("State after Revoke = %v, want untrusted", st)
	}
}

func TestLoadRefusesACorruptStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	os.WriteFile(path, []byte("{not json"), 0o600)
	if _, err := Load(path); err == nil {
		t.Error("Load(corrupt) succeeded; nothing may be trusted from a store dsh cannot read")
	}
	os.WriteFile(path, []byte(`{"version":7,"files":[]}`), 0o600)
	if _, err := Load(path); err == nil {
		t.Error("Load(version 7) succeeded")
	}
}

func TestDirFollowsXDG(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", "/x/cfg")
	if d, _ := Dir(); d != "/x/cfg/dsh" {
		t.Errorf("Dir = %q, want /x/cfg/dsh", d)
	}
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("HOME", "/home/u")
	if d, _ := Dir(); d != "/home/u/.config/dsh" {
		t.Errorf("Dir without XDG_CONFIG_HOME = %q, want /home/u/.config/dsh", d)
	}
}
