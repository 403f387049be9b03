package workspace

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/dsh-dev/dsh/internal/lazyre"
)

// The layout of a Manager's Root: one directory per workspace, named by
// an internal id (never by the workspace's name, so that a name is
// never a path), holding
//
//	workspace.json  the record below, written atomically
//	files/          the world's workspace
//
// A directory without a valid workspace.json is a create that never
// finished, or a pooled world's, and is removed when a Manager starts.
const (
	recordFile = "workspace.json"
	filesDir   = "files"
	// recordVersion is the version of workspace.json this code writes.
	recordVersion = 1
)

// lockFile is the lock of a Root: one Manager at a time owns its
// workspaces (a second would reopen and reap the first's).
const lockFile = ".lock"

// lockRoot takes root's lock, which the kernel releases when this
// process ends, however it ends.
func lockRoot(root string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(root, lockFile), os.O_RDWR|os.O_CREATE|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("workspace: locking the state root %s: %w", root, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("workspace: the state root %s is in use by another dsh serve; stop it, or give this one another root (--workspace-root)", root)
		}
		return nil, fmt.Errorf("workspace: locking the state root %s: %w", root, err)
	}
	return f, nil
}

// record is what workspace.json holds.
type record struct {
	Version     int               `json:"version"`
	Name        string            `json:"name"`
	Template    Template          `json:"template"`
	Allow       []string          `json:"allow,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	TokenHash   string            `json:"token_sha256"` // hex
	CreatedAt   time.Time         `json:"created_at"`
	ExpiresAt   time.Time         `json:"expires_at"`
	IdleTimeout Duration          `json:"idle_timeout"`
	LastUsed    time.Time         `json:"last_used"`
	// Paused is the state the workspace's user asked for: a paused
	// docker workspace is paused again when a restart reopens it.
	Paused bool `json:"paused,omitempty"`
	Pooled bool `json:"pooled,omitempty"`
}

// MakeRoot makes a state root: the root itself private (0700), its
// missing parents traversable (0755), since a world's init, mapped to
// unprivileged ids, must pass them to reach the workspace's files.
func MakeRoot(root string) error {
	if err := os.MkdirAll(filepath.Dir(root), 0o755); err != nil {
		return fmt.Errorf("workspace: making the parents of the state root %s: %w", root, err)
	}
	if err := os.Mkdir(root, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("workspace: making the state root %s: %w", root, err)
	}
	return nil
}

// ownDirRE matches the names of the directories a Manager makes under
// its root ("w-" or "p-" and newID's 16 hex digits); no other is ever
// removed.
var ownDirRE = lazyre.New(`^[wp]-[0-9a-f]{16}$`)

func (r *record) check() error {
	if r.Version != recordVersion {
		return fmt.Errorf("version %d, this dsh reads %d", r.Version, recordVersion)
	}
	if err := ValidName(r.Name); err != nil {
		return err
	}
	// The CPU limit is checked against this host's count only when the
	// world opens: a smaller host or cpuset must not lose the workspace.
	t := r.Template
	if c := t.Limits.CPUs; c < 0 || math.IsNaN(c) || math.IsInf(c, 0) {
		return fmt.Errorf("limits.cpus %v", c)
	}
	t.Limits.CPUs = 0
	if _, err := normalTemplate(t); err != nil {
		return err
	}
	if b, err := hex.DecodeString(r.TokenHash); err != nil || len(b) != sha256.Size {
		return errors.New("no valid token hash")
	}
	if r.CreatedAt.IsZero() || r.ExpiresAt.IsZero() || r.IdleTimeout <= 0 {
		return errors.New("no creation time, expiry or idle timeout")
	}
	return nil
}

// writeRecord replaces dir's workspace.json with r: a temporary file,
// synced, renamed over it, and the directory synced, so a crash leaves
// the old record or the new one, never a torn one.
func writeRecord(dir string, r *record) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, recordFile+".tmp*")
	if err != nil {
		return fmt.Errorf("workspace %s: writing its state: %w", r.Name, err)
	}
	tmp := f.Name()
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, recordFile))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("workspace %s: writing its state in %s: %w", r.Name, dir, err)
	}
	if d, err := os.Open(dir); err == nil {
		err = d.Sync()
		d.Close()
		if err != nil {
			return fmt.Errorf("workspace %s: syncing %s: %w", r.Name, dir, err)
		}
	}
	return nil
}

// readRecord reads and checks dir's workspace.json.
func readRecord(dir string) (*record, error) {
	b, err := os.ReadFile(filepath.Join(dir, recordFile))
	if err != nil {
		return nil, err
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, recordFile), err)
	}
	if err := r.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, recordFile), err)
	}
	if fi, err := os.Stat(filepath.Join(dir, filesDir)); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%s: no %s directory", dir, filesDir)
	}
	return &r, nil
}

// removeTemps removes the temporary records a crash left in dir.
func removeTemps(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), recordFile+".tmp") {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// newID is a random id of n bytes in hex.
func newID(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// newToken is a workspace token (32 random bytes, hex) and its hash.
func newToken() (token, hash string) {
	token = newID(32)
	return token, hashToken(token)
}

func hashToken(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}
