package main

import (
	"bytes"
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/sandbox"
)

// reapBeside is a backend whose Reap finishes only once its Open has
// begun, and whose Open fails.
type reapBeside struct {
	opened   chan struct{}
	reapDone atomic.Bool
}

func (r *reapBeside) Name() string { return "test-reap-beside" }

func (r *reapBeside) Open(context.Context, *sandbox.Spec, *sandbox.OpenOptions) (sandbox.Instance, error) {
	close(r.opened)
	return nil, errors.New("this backend opens no world")
}

func (r *reapBeside) Reap(context.Context) error {
	select {
	case <-r.opened:
	case <-time.After(3 * time.Second):
		return errors.New("Open did not begin while Reap ran")
	}
	time.Sleep(20 * time.Millisecond) // still reaping after Open returned
	r.reapDone.Store(true)
	return nil
}

// openWorld removes the leftovers of crashed dsh processes while the world
// opens, not before, and has finished removing them when it returns, even
// when the open failed.
func TestOpenWorldReapsWhileItOpens(t *testing.T) {
	b := &reapBeside{opened: make(chan struct{})}
	plan := &worldPlan{
		driver: driver{name: b.Name(), confines: true, newBackend: func() (execworld.Backend, error) { return b, nil }},
		spec:   sandbox.DefaultSpec(t.TempDir()),
	}
	var warn bytes.Buffer
	if _, err := openWorld(context.Background(), plan, &warn); err == nil {
		t.Fatal("openWorld succeeded on a backend that opens no world")
	}
	if !b.reapDone.Load() {
		t.Error("openWorld returned before the reap was done")
	}
	if warn.Len() != 0 {
		t.Errorf("warnings: %q, want none", warn.String())
	}
}
