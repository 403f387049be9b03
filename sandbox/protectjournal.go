package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A placeholder journal is a driver's record, in its own state where no
// world reaches, of the placeholders PrepareProtected makes for one world
// in its workspace: a line for each before any is made, and a line with
// each one's identity once they are. Close removes the journal with the
// placeholders. A dsh that dies before its Close (killed, or crashed)
// leaves both behind, and the next start, once the world's owner is
// gone, removes what the journal records as Close would have
// (ReapProtected): an empty .git, dsh.yaml or .envrc left in a workspace
// would change what git, direnv and dsh itself find there.
//
// The lines, paths quoted as Go strings (any bytes round-trip):
//
//	ws "/abs/workspace"
//	plan "rel" dir|file
//	made "rel" DEV INO BORN
//
// BORN is the birth time in ns, 0 where the file system keeps none.

// journalEntry is a plan or made line of a journal.
type journalEntry struct {
	Rel  string
	Dir  bool // plan: the kind to make
	Made bool // made: its identity below
	Dev  uint64
	Ino  uint64
	Born int64
}

func (e journalEntry) line() string {
	if e.Made {
		return fmt.Sprintf("made %s %d %d %d\n", strconv.Quote(e.Rel), e.Dev, e.Ino, e.Born)
	}
	kind := "file"
	if e.Dir {
		kind = "dir"
	}
	return "plan " + strconv.Quote(e.Rel) + " " + kind + "\n"
}

// maxJournal bounds what ReapProtected reads: a world has a few
// placeholders, each two short lines.
const maxJournal = 1 << 20

// journal is the file a Protection records its placeholders in; a nil
// journal records nothing.
type journal struct {
	path string
	ws   string   // the workspace, which the first line names
	f    *os.File // created with the first entries
}

// add appends entries to the journal in one write; the first create it
// (a file that already exists is some other world's).
func (j *journal) add(entries ...journalEntry) error {
	if j == nil || len(entries) == 0 {
		return nil
	}
	var b strings.Builder
	if j.f == nil {
		f, err := os.OpenFile(j.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("recording the workspace's placeholders: %w (dsh writes down each placeholder it makes, so that one left by a crash is removed)", err)
		}
		j.f = f
		b.WriteString("ws " + strconv.Quote(j.ws) + "\n")
	}
	for _, e := range entries {
		b.WriteString(e.line())
	}
	if _, err := j.f.WriteString(b.String()); err != nil {
		return fmt.Errorf("recording the workspace's placeholders in %s: %w", j.path, err)
	}
	return nil
}

// close closes the journal's file and leaves it for ReapProtected.
func (j *journal) close() {
	if j != nil && j.f != nil {
		j.f.Close()
		j.f = nil
	}
}

// remove closes and removes the journal, once the placeholders it
// records are gone.
func (j *journal) remove() error {
	if j == nil || j.f == nil {
		return nil
	}
	j.close()
	if err := os.Remove(j.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing the placeholders' journal: %w", err)
	}
	return nil
}

// ReapProtected removes the placeholders the journal at path records, as
// the Close of the world that wrote it would have: each that is still
// the empty directory, or the file as dsh wrote it, that dsh made there
// (the same device, inode and birth time, where the journal got to
// record them) and that no live world holds; then the journal. The
// caller knows that the journal's world is gone: its dsh exited without
// closing it. A journal no dsh wrote is refused, and left.
func ReapProtected(path string) error {
	p, err := readJournal(path)
	if err != nil {
		return err
	}
	if err := p.removeMade(); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing the placeholders' journal %s: %w", path, err)
	}
	return nil
}

// ReapJournals reaps (ReapProtected) each journal in dir whose name, less
// JournalSuffix, gone says is a world of a dsh that is gone: each driver
// names its journals after the owner as it records owners. It returns
// the names it reaped, and why it could not reap the others.
func ReapJournals(dir string, gone func(name string) bool) (reaped []string, err error) {
	entries, _ := os.ReadDir(dir)
	var errs []error
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), JournalSuffix)
		if !ok || !gone(name) {
			continue
		}
		if err := ReapProtected(filepath.Join(dir, e.Name())); err != nil {
			errs = append(errs, fmt.Errorf("world %s: %w", name, err))
			continue
		}
		reaped = append(reaped, name)
	}
	return reaped, errors.Join(errs...)
}

// readJournal reads the journal at path into the Protection that would
// remove its placeholders. A line cut short by the crash that left the
// journal ends it.
func readJournal(path string) (*Protection, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the placeholders' journal: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxJournal+1))
	if err != nil {
		return nil, fmt.Errorf("reading the placeholders' journal %s: %w", path, err)
	}
	if len(b) > maxJournal {
		return nil, badJournal(path, fmt.Sprintf("is over %d bytes", maxJournal))
	}
	p := &Protection{}
	lines := bytes.Split(b, []byte("\n"))
	// The last is what follows the last newline: empty, or a line the
	// crash cut short.
	for i, line := range lines[:len(lines)-1] {
		kind, rest, _ := strings.Cut(string(line), " ")
		q, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return nil, badJournal(path, fmt.Sprintf("has the line %q", line))
		}
		name, _ := strconv.Unquote(q)
		fields := strings.Fields(rest[len(q):])
		switch {
		case i == 0:
			if kind != "ws" || !filepath.IsAbs(name) || filepath.Clean(name) != name {
				return nil, badJournal(path, fmt.Sprintf("begins %q, not with an absolute clean workspace path", line))
			}
			p.ws = name
			continue
		case CheckProtected([]string{name}) != nil:
			return nil, badJournal(path, fmt.Sprintf("names %q, not a path inside a workspace", name))
		case kind == "plan" && len(fields) == 1 && (fields[0] == "dir" || fields[0] == "file"):
			p.made = append(p.made, placeholder{rel: name, dir: fields[0] == "dir", content: placeholderContent[name], unknown: true})
		case kind == "made" && len(fields) == 3:
			dev, err1 := strconv.ParseUint(fields[0], 10, 64)
			ino, err2 := strconv.ParseUint(fields[1], 10, 64)
			born, err3 := strconv.ParseInt(fields[2], 10, 64)
			if err := errors.Join(err1, err2, err3); err != nil {
				return nil, badJournal(path, fmt.Sprintf("has the line %q", line))
			}
			for j := range p.made {
				if p.made[j].rel == name {
					p.made[j].dev, p.made[j].ino, p.made[j].born, p.made[j].unknown = dev, ino, born, false
				}
			}
		default:
			return nil, badJournal(path, fmt.Sprintf("has the line %q", line))
		}
	}
	return p, nil
}

func badJournal(path, what string) error {
	return fmt.Errorf("the placeholders' journal %s %s: not one dsh wrote; nothing it names was removed (remove it)", path, what)
}

// JournalSuffix ends the name of every placeholder journal: a driver
// names a world's journal after the world and its owner, and finds
// those of dead owners by it.
const JournalSuffix = ".placeholders"
