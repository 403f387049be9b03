package sandbox

import (
	"errors"
	"strings"
	"testing"
)

func TestWorkspaceModeChecked(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*Spec)
		field  string // "" for valid
	}{
		{"default", func(*Spec) {}, ""},
		{"ro", func(s *Spec) { s.WorkspaceMode = WorkspaceRO }, ""},
		{"overlay", func(s *Spec) { s.WorkspaceMode = WorkspaceOverlay; s.OverlaySize = 64 << 20 }, ""},
		{"unknown mode", func(s *Spec) { s.WorkspaceMode = "cow" }, "WorkspaceMode"},
		{"tiny overlay", func(s *Spec) { s.WorkspaceMode = WorkspaceOverlay; s.OverlaySize = 4096 }, "OverlaySize"},
		{"negative overlay", func(s *Spec) { s.WorkspaceMode = WorkspaceOverlay; s.OverlaySize = -1 }, "OverlaySize"},
		{"overlay above memory", func(s *Spec) { s.WorkspaceMode = WorkspaceOverlay; s.OverlaySize = 4 << 30 }, "OverlaySize"},
		{"overlay, no limits", func(s *Spec) { s.WorkspaceMode = WorkspaceOverlay; s.OverlaySize = 4 << 30; s.Resources = nil }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := DefaultSpec("/srv/app")
			tc.mutate(s)
			err := CheckWorkspaceMode(s)
			var se *SpecError
			switch {
			case tc.field == "" && err != nil:
				t.Errorf("CheckWorkspaceMode = %v, want nil", err)
			case tc.field != "" && (!errors.As(err, &se) || se.Field != tc.field || se.Fix == ""):
				t.Errorf("CheckWorkspaceMode = %v, want a SpecError at %s with a fix", err, tc.field)
			}
		})
	}
}

func TestUpperSize(t *testing.T) {
	s := DefaultSpec("/srv/app") // 2 GiB of memory
	if got := s.UpperSize(); got != DefaultOverlaySize {
		t.Errorf("UpperSize with 2GiB of memory = %d, want %d", got, DefaultOverlaySize)
	}
	mem := int64(256 << 20)
	s.Resources.Memory.Limit = &mem
	if got := s.UpperSize(); got != 128<<20 {
		t.Errorf("UpperSize with 256MiB of memory = %d, want half of it", got)
	}
	s.OverlaySize = 200 << 20
	if got := s.UpperSize(); got != 200<<20 {
		t.Errorf("UpperSize with OverlaySize set = %d, want it", got)
	}
	if d := OverlayTmpfsData(8 << 20); !strings.Contains(d, "size=8388608") || !strings.Contains(d, "nr_inodes=2048") {
		t.Errorf("OverlayTmpfsData(8MiB) = %q", d)
	}
}
