package docker

import (
	"context"
	"errors"
	"fmt"
)

// errPaused is returned by Start while the container is paused: the init
// cannot answer, and execworld refuses first (ErrPaused).
var errPaused = errors.New("docker: the world's container is paused; unpause it first")

// Freeze pauses the world's container (the engine's cgroup freezer):
// every process, the init included, stops with its memory kept. It
// returns once the engine reports the container paused.
func (w *world) Freeze() error { return w.setPaused(true) }

// Thaw unpauses the world's container.
func (w *world) Thaw() error { return w.setPaused(false) }

func (w *world) setPaused(pause bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	if w.paused == pause {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	var err error
	if pause {
		err = w.d.cli.ContainerPause(ctx, w.containerID)
	} else {
		err = w.d.cli.ContainerUnpause(ctx, w.containerID)
	}
	if err != nil {
		verb := "pausing"
		if !pause {
			verb = "unpausing"
		}
		return fmt.Errorf("docker: %s container %s of world %s: %w", verb, shortID(w.containerID), w.id, err)
	}
	w.paused = pause
	return nil
}

func (w *world) isPaused() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.paused
}

func shortID(id string) string { return id[:min(12, len(id))] }
