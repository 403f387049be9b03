package bridge

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-dev/dsh/execworld"
)

// Command is a stdio server run inside a world of its own: its stdio is
// the process's Running.Conn under the go-sdk IOTransport, its stderr is
// drained into a Ring that errors quote. The world is opened at the
// first Start and kept for the next ones; Close closes it. Only one
// process runs at a time: the supervisor stops the last before it starts
// the next.
type Command struct {
	// World opens the server's world. Required; called once.
	World func(ctx context.Context) (*execworld.World, error)
	// Argv is the program and its arguments (no shell).
	Argv []string
	// Env are KEY=VALUE entries of the process, secrets resolved: they
	// reach only this world.
	Env []string
	// Dir is the working directory inside the world's workspace.
	Dir string
	// StderrBytes is the stderr tail kept. If zero, DefaultStderrBytes.
	StderrBytes int
	// Grace is the time the process gets to exit after its stdin closes,
	// and again after SIGTERM. If zero, 2s.
	Grace time.Duration

	mu     sync.Mutex // guards the fields below
	w      *execworld.World
	closed bool
}

func (c *Command) protocolVersion() string { return PinnedProtocolVersion }

func (c *Command) world(ctx context.Context) (*execworld.World, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	if c.w != nil {
		return c.w, nil
	}
	if c.World == nil {
		return nil, errors.New("bridge: Command.World is nil")
	}
	w, err := c.World(ctx)
	if err != nil {
		return nil, fmt.Errorf("opening the server's world: %w", err)
	}
	c.w = w
	return w, nil
}

// WorldID is the ID of the server's world ("" before the first start):
// the proxy's audit lines carry it.
func (c *Command) WorldID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.w == nil {
		return ""
	}
	return c.w.ID
}

// Start starts the server's process in its world.
func (c *Command) Start(ctx context.Context) (*Link, error) {
	w, err := c.world(ctx)
	if err != nil {
		return nil, err
	}
	grace := c.Grace
	if grace == 0 {
		grace = 2 * time.Second
	}
	stderr := &Ring{Max: c.StderrBytes}
	r, err := w.Exec.Start(ctx, &execworld.Cmd{
		Argv:       c.Argv,
		Env:        c.Env,
		Dir:        c.Dir,
		StdinPipe:  true,
		StdoutPipe: true,
		Stderr:     stderr,
		// The stdout tail is what the client has read; keep it small.
		MaxOutputBytes: 4 << 10,
		Grace:          grace,
	})
	if err != nil {
		return nil, err
	}
	conn := r.Conn()
	return &Link{
		Transport: &mcp.IOTransport{Reader: conn, Writer: conn},
		Stop: func(ctx context.Context) error {
			conn.Close()
			return r.Shutdown(ctx)
		},
		Diagnose: func() string { return describe(r, stderr) },
	}, nil
}

// describe is how the process is doing: its exit, if it has exited,
// and the tail of its stderr.
func describe(r *execworld.Running, stderr *Ring) string {
	var s string
	select {
	case <-r.Done():
		res, _ := r.Wait()
		switch {
		case res.Lost:
			s = "the server's process was lost"
		case res.OOMKilled:
			s = "the server was killed for exceeding its memory limit"
		default:
			s = "the server exited: " + res.Status.String()
		}
	case <-time.After(50 * time.Millisecond):
		// The exit is usually a moment behind the closed pipe.
	}
	if tail := stderr.String(); tail != "" {
		if s != "" {
			s += "; "
		}
		s += "its stderr ends: " + tail
	}
	return s
}

// Close closes the server's world (killing whatever still runs in it).
func (c *Command) Close() error {
	c.mu.Lock()
	w := c.w
	c.w = nil
	c.closed = true
	c.mu.Unlock()
	if w == nil {
		return nil
	}
	return w.Close()
}
