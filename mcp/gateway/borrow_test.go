package gateway_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/mcp/gateway"
	"github.com/dsh-dev/dsh/sandbox"
)

// A borrowed world is given back, never closed: when the session ends,
// when it idles, and when the gateway closes, release is called once and
// the world keeps running for its owner.
func TestBorrowedWorldIsReleasedNotClosed(t *testing.T) {
	for _, end := range []string{"session", "idle", "gateway"} {
		t.Run(end, func(t *testing.T) {
			var lent *execworld.World
			var borrows, releases atomic.Int32
			f := newFixture(t, func(o *gateway.Options) {
				o.Open = nil
				o.Borrow = func(ctx context.Context) (*execworld.World, func(), error) {
					borrows.Add(1)
					return lent, func() { releases.Add(1) }, nil
				}
				if end == "idle" {
					o.IdleTimeout = 100 * time.Millisecond
				}
			})
			w, err := execworld.Open(context.Background(), f.backend, &execworld.Options{Spec: sandbox.DefaultSpec(f.ws)})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			lent = w
			cs := f.connect(t, nil)
			out := structured[gateway.ExecOutput](t, call(t, cs, "exec", map[string]any{"command": "echo hi"}))
			if out.World != w.ID {
				t.Fatalf("exec ran in world %q, want the lent %s", out.World, w.ID)
			}
			switch end {
			case "session":
				cs.Close()
			case "gateway":
				f.g.Close()
			}
			waitFor(t, "the world released", func() bool { return releases.Load() == 1 })
			if b := borrows.Load(); b != 1 {
				t.Errorf("%d borrows for one session's calls, want 1", b)
			}
			if n := f.backend.OpenInstances(); n != 1 {
				t.Fatalf("%d instances open after the release, want the lent world's 1 (the gateway closed it)", n)
			}
			if res, err := w.Exec.Run(context.Background(), &execworld.Cmd{Argv: []string{"true"}}); err != nil || res.ExitCode() != 0 {
				t.Fatalf("the lent world no longer runs commands after the release: %v", err)
			}
			time.Sleep(50 * time.Millisecond)
			if r := releases.Load(); r != 1 {
				t.Errorf("released %d times, want once", r)
			}
		})
	}
}

func TestOpenOrBorrow(t *testing.T) {
	open := func(context.Context) (*execworld.World, error) { return nil, nil }
	borrow := func(context.Context) (*execworld.World, func(), error) { return nil, nil, nil }
	if _, err := gateway.New(&gateway.Options{}); err == nil {
		t.Error("a gateway with neither Open nor Borrow was made")
	}
	if _, err := gateway.New(&gateway.Options{Open: open, Borrow: borrow}); err == nil {
		t.Error("a gateway with both Open and Borrow was made")
	}
}
