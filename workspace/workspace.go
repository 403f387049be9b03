// Package workspace hosts named, persistent execution worlds: each
// workspace is a directory of files under dsh's state root and, while it
// runs, one execworld.World over it, with a TTL, an idle timeout, pause
// and resume, and a per-workspace token. A Manager owns them; the REST
// API (package workspace/api) and the `dsh world` client sit on it.
//
// The wire contract (routes, JSON shapes, errors) is docs/WORKSPACES.md.
package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/netpolicy"
)

// States of a workspace.
const (
	StateRunning = "running" // its world is open
	StatePaused  = "paused"  // its world is frozen, memory kept
	StateStopped = "stopped" // no world; its files stay (native after a restart)
)

// Errors of a Manager. The API maps each to its HTTP status; every one
// is returned wrapped with a message that names the input and the fix.
var (
	ErrNotFound  = errors.New("no such workspace")                            // 404
	ErrExists    = errors.New("workspace already exists")                     // 409
	ErrInvalid   = errors.New("invalid workspace request")                    // 400
	ErrConflict  = errors.New("workspace is not in a state that allows this") // 409 (e.g. exec while paused)
	ErrForbidden = errors.New("token does not reach this workspace")          // 403
	ErrLimit     = errors.New("workspace limit reached")                      // 429
)

// Limits of a workspace's world. Zero values take the server's defaults.
type Limits struct {
	// Memory such as "256MiB" or "1G".
	Memory string  `json:"memory,omitempty"`
	Pids   int     `json:"pids,omitempty"`
	CPUs   float64 `json:"cpus,omitempty"`
}

// Template is what a warm pool's worlds are opened with; a create whose
// driver, image and limits equal a template's takes a pooled world.
type Template struct {
	Driver string `json:"driver"`
	Image  string `json:"image,omitempty"` // docker only
	Limits Limits `json:"limits"`
}

// CreateRequest asks for a new workspace.
type CreateRequest struct {
	// Name: 1–63 of [a-z0-9-], starting with a letter or digit. Empty
	// generates one ("ws-" and 10 hex digits).
	Name     string `json:"name,omitempty"`
	Template        // driver ("" = the server's), image, limits
	// Allow are egress entries (HOST:PORT, CIDR, as --allow), on top of
	// nothing: a workspace without them has no network.
	Allow []string `json:"allow,omitempty"`
	// TTL: the workspace is deleted this long after creation (or its
	// last extension). Zero takes the server's default; beyond the
	// server's maximum is refused.
	TTL Duration `json:"ttl,omitempty"`
	// IdleTimeout closes the world (files kept; the workspace is then
	// stopped, and reopened on its next use) after this long without a
	// request. Zero takes the server's default.
	IdleTimeout Duration          `json:"idle_timeout,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
}

// Workspace is what the API reports of one workspace.
type Workspace struct {
	Name        string            `json:"name"`
	Driver      string            `json:"driver"`
	Image       string            `json:"image,omitempty"`
	Limits      Limits            `json:"limits"`
	Allow       []string          `json:"allow,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	State       string            `json:"state"`
	World       string            `json:"world,omitempty"` // the open world's ID
	CreatedAt   time.Time         `json:"created_at"`
	ExpiresAt   time.Time         `json:"expires_at"`
	IdleTimeout Duration          `json:"idle_timeout"`
	LastUsed    time.Time         `json:"last_used"`
	// Pooled tells that the create took a pre-opened world of the pool.
	Pooled bool `json:"pooled,omitempty"`
}

// Created is the answer to a create: the workspace and its token, which
// is shown once (the server keeps only its hash).
type Created struct {
	Workspace Workspace `json:"workspace"`
	Token     string    `json:"token"`
}

// Manager owns the workspaces of one server.
type Manager interface {
	Create(ctx context.Context, req *CreateRequest) (*Created, error)
	List(ctx context.Context) ([]Workspace, error)
	Get(ctx context.Context, name string) (*Workspace, error)
	// World returns the workspace's open world, opening it first if the
	// workspace is stopped, and marks the workspace used. release must be
	// called when the caller is done (the idle timer and delete wait for
	// it); the caller never closes the world. A paused workspace returns
	// ErrConflict.
	World(ctx context.Context, name string) (w *execworld.World, release func(), err error)
	// Extend moves the expiry to now+by or later (never earlier), up to
	// the server's maximum TTL from now.
	Extend(ctx context.Context, name string, by time.Duration) (*Workspace, error)
	Pause(ctx context.Context, name string) (*Workspace, error)
	Resume(ctx context.Context, name string) (*Workspace, error)
	// Delete closes the world and removes the workspace's files and state.
	Delete(ctx context.Context, name string) error
	// Authorize tells whether token is the workspace's own token.
	Authorize(name, token string) bool
	// Close closes every world (files and state stay) and stops the pool
	// and the reaper.
	Close() error
}

// Opener opens the worlds of a Manager; dsh serve implements it from its
// configuration (the driver's backend, the world's spec, the egress
// policy of an allow list), tests with a driver of their choice.
type Opener interface {
	// Open opens a world whose workspace is dir, with the template's
	// driver, image and limits, and an egress proxy allowing exactly
	// allow (none: a proxy that denies everything, so that SetEgress can
	// widen it later). An input error wraps ErrInvalid.
	Open(ctx context.Context, dir string, t Template, allow []string) (*execworld.World, error)
	// Policy is the egress policy allowing exactly allow, for SetEgress
	// on a pooled world. An input error wraps ErrInvalid.
	Policy(allow []string) (*netpolicy.Policy, error)
}

// Duration is a time.Duration written as a Go duration string ("90s",
// "1h30m") in JSON.
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"90s\" or \"1h30m\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %w; write it as \"90s\" or \"1h30m\"", s, err)
	}
	if v < 0 {
		return fmt.Errorf("duration %q is negative", s)
	}
	*d = Duration(v)
	return nil
}

// ExecRequest runs one command in a workspace (POST .../exec).
type ExecRequest struct {
	Argv    []string `json:"argv"`
	Env     []string `json:"env,omitempty"`
	Dir     string   `json:"dir,omitempty"`
	Stdin   []byte   `json:"stdin,omitempty"`
	Timeout Duration `json:"timeout,omitempty"`
}

// ExecEvent is one line of an exec's answer: output as it arrives, then
// the exit (or, alone, an error).
type ExecEvent struct {
	Stdout []byte     `json:"stdout,omitempty"`
	Stderr []byte     `json:"stderr,omitempty"`
	Exit   *ExecExit  `json:"exit,omitempty"`
	Error  *ErrorBody `json:"error,omitempty"`
}

// ExecExit is how a command ended.
type ExecExit struct {
	Code       int    `json:"code"`
	Signal     string `json:"signal,omitempty"`
	DurationMS int64  `json:"duration_ms"`
}

// ErrorBody is the body of every error answer, as {"error": ErrorBody}.
type ErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Entry is one entry of a listing (GET .../ls/{path}).
type Entry struct {
	Name  string    `json:"name"`
	Type  string    `json:"type"` // file, dir, symlink, other
	Size  int64     `json:"size"`
	Mode  string    `json:"mode"` // such as "0644"
	MTime time.Time `json:"mtime"`
}
