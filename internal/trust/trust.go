// Package trust records which project configuration files the user
// trusts to widen confinement: each by its absolute path and the SHA-256
// of its content, so any change to a file makes it untrusted again (the
// direnv allow model). The store is a JSON file in the user's
// configuration directory, a place no world can write.
package trust

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"
)

// FileName is the store's name in dsh's configuration directory.
const FileName = "trusted.json"

// Dir is dsh's directory in the user's configuration directory:
// $XDG_CONFIG_HOME/dsh, else ~/.config/dsh.
func Dir() (string, error) {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" || !filepath.IsAbs(dir) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("finding the user's configuration directory: %w", err)
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "dsh"), nil
}

// DefaultPath is the store's path: Dir()/trusted.json.
func DefaultPath() (string, error) {
	d, err := Dir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, FileName), nil
}

// Hash is the hex SHA-256 of data, as the store records it.
func Hash(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// Entry is one trusted file.
type Entry struct {
	Path    string    `json:"path"`   // absolute
	SHA256  string    `json:"sha256"` // hex, of the content trusted
	Trusted time.Time `json:"trusted_at"`
}

// State is what the store says of a file's content.
type State int

const (
	// Unknown: the store has no entry for the path.
	Unknown State = iota
	// Trusted: the path's entry has this content's hash.
	Trusted
	// Changed: the path was trusted with other content.
	Changed
)

func (s State) String() string {
	switch s {
	case Trusted:
		return "trusted"
	case Changed:
		return "changed since trusted"
	}
	return "untrusted"
}

// Store is the set of trusted files, read from and written to Path.
type Store struct {
	Path    string
	Entries []Entry
}

type storeFile struct {
	Version int     `json:"version"`
	Files   []Entry `json:"files"`
}

// Load reads the store at path; a missing file is an empty store. A
// store that cannot be read is an error naming it: nothing is trusted
// from a store dsh cannot read.
func Load(path string) (*Store, error) {
	s := &Store{Path: path}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the trust store: %w", err)
	}
	var f storeFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("trust store %s is not valid JSON (%v); remove it and trust the files again with dsh trust FILE", path, err)
	}
	if f.Version != 1 {
		return nil, fmt.Errorf("trust store %s has version %d, want 1; remove it and trust the files again with dsh trust FILE", path, f.Version)
	}
	s.Entries = f.Files
	return s, nil
}

// State says whether the file at path (absolute) with content data is
// trusted.
func (s *Store) State(path string, data []byte) State {
	i := s.index(path)
	switch {
	case i < 0:
		return Unknown
	case s.Entries[i].SHA256 == Hash(data):
		return Trusted
	}
	return Changed
}

func (s *Store) index(path string) int {
	return slices.IndexFunc(s.Entries, func(e Entry) bool { return e.Path == path })
}

// Add trusts the file at path (absolute) with content data, replacing
// any entry of the path, and returns the entry.
func (s *Store) Add(path string, data []byte, now time.Time) Entry {
	e := Entry{Path: path, SHA256: Hash(data), Trusted: now.UTC().Truncate(time.Second)}
	if i := s.index(path); i >= 0 {
		s.Entries[i] = e
	} else {
		s.Entries = append(s.Entries, e)
	}
	sort.Slice(s.Entries, func(i, j int) bool { return s.Entries[i].Path < s.Entries[j].Path })
	return e
}

// Revoke removes the entry of path and reports whether there was one.
func (s *Store) Revoke(path string) bool {
	i := s.index(path)
	if i < 0 {
		return false
	}
	s.Entries = slices.Delete(s.Entries, i, i+1)
	return true
}

// Save writes the store atomically (a temporary file in the same
// directory, synced, then renamed over it), mode 0600, creating its
// directory 0700 if needed.
func (s *Store) Save() error {
	dir := filepath.Dir(s.Path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	entries := s.Entries
	if entries == nil {
		entries = []Entry{}
	}
	data, err := json.MarshalIndent(storeFile{Version: 1, Files: entries}, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".trusted-*.json")
	if err != nil {
		return fmt.Errorf("writing the trust store: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("writing the trust store: %w", err)
	}
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("writing the trust store: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("writing the trust store: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing the trust store: %w", err)
	}
	if err := os.Rename(tmp.Name(), s.Path); err != nil {
		return fmt.Errorf("writing the trust store: %w", err)
	}
	return nil
}
