package sandbox

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/internal/testenv"
	"golang.org/x/sys/unix"
)

// crash leaves p as a dsh that dies leaves it: its locks released (the
// kernel drops them with the process), its placeholders and journal in
// place.
func crash(p *Protection) {
	for _, f := range p.held {
		f.Close()
	}
	p.journal.close()
}

// A world's placeholders are recorded before any is made and again once
// they are; Close removes the journal with them.
func TestJournalRecordsEachPlaceholder(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	journal := filepath.Join(state, "w"+JournalSuffix)
	p, err := PrepareProtected(ws, []string{"dsh.yaml", ".dsh/"}, nil, false, journal)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(journal)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	want := []string{`ws "` + ws + `"`, `plan "dsh.yaml" file`, `plan ".dsh" dir`, `made "dsh.yaml" `, `made ".dsh" `}
	if len(lines) != len(want) {
		t.Fatalf("journal:\n%s\nwant %d lines", b, len(want))
	}
	for i := range want {
		if !strings.HasPrefix(lines[i], want[i]) {
			t.Errorf("journal line %d: %s, want it to begin %s", i, lines[i], want[i])
		}
	}
	if fi, err := os.Stat(journal); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("journal mode: %v, %v; want 0600", fi.Mode(), err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if got := testenv.DirNames(t, state); len(got) != 0 {
		t.Errorf("after Close the state holds %q", got)
	}
	// A workspace that needs no placeholder gets no journal.
	if err := os.WriteFile(filepath.Join(ws, "dsh.yaml"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	p, err = PrepareProtected(ws, []string{"dsh.yaml"}, nil, false, journal)
	if err != nil {
		t.Fatal(err)
	}
	if got := testenv.DirNames(t, state); len(got) != 0 {
		t.Errorf("with nothing to make the state holds %q", got)
	}
	p.Close()
}

// ReapProtected removes what a dead world made, as its Close would have:
// not a placeholder its user has written to since, nor one a live world
// still holds, nor an empty directory the user made in place of one,
// nor anything else of the user's.
func TestReapProtectedRemovesWhatADeadWorldMade(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	journal := filepath.Join(state, "dead"+JournalSuffix)
	dead, err := PrepareProtected(ws, DefaultProtected, nil, false, journal)
	if err != nil {
		t.Fatal(err)
	}
	crash(dead)
	live, err := PrepareProtected(ws, []string{".vscode/"}, nil, false, filepath.Join(state, "live"+JournalSuffix))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	if err := os.WriteFile(filepath.Join(ws, ".envrc"), []byte("export A=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".dsh", "kept"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// The user's own .agents, made in a later tick of the clock that
	// stamps a file's birth, may get the placeholder's inode number.
	if err := os.Remove(filepath.Join(ws, ".agents")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if err := os.Mkdir(filepath.Join(ws, ".agents"), 0o755); err != nil {
		t.Fatal(err)
	}
	want := []string{".agents", ".dsh", ".envrc", ".vscode", "notes.txt"}
	id, _ := statID(unix.AT_FDCWD, filepath.Join(ws, ".agents"), 0)
	for _, ph := range dead.made {
		if ph.rel == ".agents" && id.born == 0 && id.dev == ph.dev && id.ino == ph.ino {
			t.Logf("the file system of %s keeps no birth times and gave the new .agents the placeholder's inode number: nothing tells them apart", ws)
			want = want[1:]
		}
	}

	if err := ReapProtected(journal); err != nil {
		t.Fatal(err)
	}
	if got := testenv.DirNames(t, ws); !reflect.DeepEqual(got, want) {
		t.Errorf("after the reap the workspace holds %q, want %q (the user's, and what the user wrote to, made anew or a live world holds)", got, want)
	}
	if _, err := os.Stat(journal); !os.IsNotExist(err) {
		t.Errorf("the dead world's journal is still there: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "notes.txt")); string(b) != "mine" {
		t.Errorf("notes.txt holds %q", b)
	}
}

// A dsh that died between writing a placeholder down and recording what
// it made: the empty directory or file it made goes; the same path
// holding anything does not, nor a kind of file dsh never makes there.
func TestReapProtectedUnrecordedPlaceholder(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	for _, d := range []string{".dsh", ".agents"} {
		if err := os.Mkdir(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ws, ".agents", "AGENTS.md"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"dsh.yaml", ".envrc"} {
		if err := os.WriteFile(filepath.Join(ws, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	journal := filepath.Join(state, "w"+JournalSuffix)
	lines := `ws "` + ws + `"
plan ".dsh" dir
plan ".agents" dir
plan "dsh.yaml" file
plan ".envrc" dir
plan ".vscode" di`
	if err := os.WriteFile(journal, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := ReapProtected(journal); err != nil {
		t.Fatal(err)
	}
	if got, want := testenv.DirNames(t, ws), []string{".agents", ".envrc"}; !reflect.DeepEqual(got, want) {
		t.Errorf("after the reap the workspace holds %q, want %q", got, want)
	}
}

// A journal that names a workspace or a path no dsh writes is refused,
// and nothing is removed.
func TestReapProtectedRefusesABadJournal(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{
		`ws "relative/ws"` + "\n" + `plan ".dsh" dir`,
		`ws "` + ws + `/sub/.."` + "\n" + `plan ".dsh" dir`,
		`ws "` + ws + `/sub"` + "\n" + `plan "../sub" dir`,
		`ws "` + ws + `"` + "\n" + `plan "/etc" dir`,
		`ws "` + ws + `"` + "\n" + `plan "sub" pipe`,
		`ws "` + ws + `"` + "\n" + `made "sub" 1 x 3`,
		`plan "sub" dir` + "\n" + `ws "` + ws + `"`,
	} {
		journal := filepath.Join(state, "w"+JournalSuffix)
		if err := os.WriteFile(journal, []byte(bad+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := ReapProtected(journal); err == nil || !strings.Contains(err.Error(), "not one dsh wrote") {
			t.Errorf("journal %s: %v, want a refusal", bad, err)
		}
		if got := testenv.DirNames(t, ws); !reflect.DeepEqual(got, []string{"sub"}) {
			t.Fatalf("journal %s: the workspace holds %q", bad, got)
		}
	}
}

// A journal that exists already belongs to another world: the placeholders
// are not made without a record of their own.
func TestPrepareProtectedJournalTaken(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	journal := filepath.Join(state, "w"+JournalSuffix)
	if err := os.WriteFile(journal, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := PrepareProtected(ws, DefaultProtected, nil, false, journal); err == nil || !strings.Contains(err.Error(), "recording the workspace's placeholders") {
		t.Fatalf("PrepareProtected with a taken journal: %v", err)
	}
	if got := testenv.DirNames(t, ws); len(got) != 0 {
		t.Errorf("the workspace holds %q", got)
	}
}

// Two worlds on one workspace: the second finds the first's placeholders,
// adopts them rather than making its own beneath them, and whichever
// closes last removes them, in either order.
func TestOverlappingWorldsLeaveNoPlaceholders(t *testing.T) {
	for _, firstClosesFirst := range []bool{true, false} {
		ws, state := t.TempDir(), t.TempDir()
		a, err := PrepareProtected(ws, DefaultProtected, nil, false, filepath.Join(state, "a"+JournalSuffix))
		if err != nil {
			t.Fatal(err)
		}
		made := testenv.DirNames(t, ws)
		b, err := PrepareProtected(ws, DefaultProtected, nil, false, filepath.Join(state, "b"+JournalSuffix))
		if err != nil {
			t.Fatal(err)
		}
		if got := testenv.DirNames(t, filepath.Join(ws, ".git")); len(got) != 0 {
			t.Errorf("the second world made %q inside the first's .git placeholder", got)
		}
		if got, want := mounts(ws, b), mounts(ws, a); !reflect.DeepEqual(got, want) {
			t.Errorf("the second world mounts %q, the first %q", got, want)
		}
		first, last := a, b
		if !firstClosesFirst {
			first, last = b, a
		}
		first.Close()
		if got := testenv.DirNames(t, ws); !reflect.DeepEqual(got, made) {
			t.Errorf("with a world still open the workspace holds %q, want its placeholders %q", got, made)
		}
		last.Close()
		if got := testenv.DirNames(t, ws); len(got) != 0 {
			t.Errorf("first closes first %v: after both closed the workspace holds %q", firstClosesFirst, got)
		}
		if got := testenv.DirNames(t, state); len(got) != 0 {
			t.Errorf("first closes first %v: journals left: %q", firstClosesFirst, got)
		}
	}
}

// IsPlaceholder tells dsh's empty, marked placeholder from the user's
// files, empty or not, and from a placeholder the user has written to.
func TestIsPlaceholder(t *testing.T) {
	ws := t.TempDir()
	p, err := PrepareProtected(ws, []string{"dsh.yaml", ".envrc"}, nil, false, "")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if !IsPlaceholder(filepath.Join(ws, "dsh.yaml")) {
		t.Error("IsPlaceholder(the world's dsh.yaml placeholder) = false")
	}
	if err := os.WriteFile(filepath.Join(ws, ".envrc"), []byte("export A=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if IsPlaceholder(filepath.Join(ws, ".envrc")) {
		t.Error("IsPlaceholder(a placeholder the user wrote to) = true")
	}
	mine := filepath.Join(t.TempDir(), "dsh.yaml")
	if err := os.WriteFile(mine, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if IsPlaceholder(mine) {
		t.Error("IsPlaceholder(the user's own empty dsh.yaml) = true")
	}
	if IsPlaceholder(filepath.Join(ws, "missing")) || IsPlaceholder(ws) {
		t.Error("IsPlaceholder of a missing path or a directory = true")
	}
}
