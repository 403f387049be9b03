package execworld_test

import (
	"context"
	"errors"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/execworld/execworldtest"
)

// A long-lived server outlives the ctx of its start, and Conn drives it.
func TestStartCtxBoundsTheStartOnly(t *testing.T) {
	w, _ := execworldtest.NewWorld(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	r, err := w.Exec.Start(ctx, &execworld.Cmd{Argv: []string{"cat"}, StdinPipe: true, StdoutPipe: true})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	select {
	case <-r.Done():
		res, _ := r.Wait()
		t.Fatalf("the process ended with the ctx of its start: %+v", res)
	default:
	}
	conn := r.Conn()
	buf := make([]byte, 5)
	for _, msg := range []string{"ping1", "ping2"} {
		if _, err := io.WriteString(conn, msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(conn, buf); err != nil || string(buf) != msg {
			t.Fatalf("echo of %q through Conn = %q, %v", msg, buf, err)
		}
	}
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Read(buf); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Read after Close = %v; want os.ErrClosed", err)
	}
	if _, err := conn.Write(buf); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Write after Close = %v; want os.ErrClosed", err)
	}
	res, err := r.Wait()
	if err != nil || res.ExitCode() != 0 || res.Canceled {
		t.Fatalf("cat after Conn.Close = %+v, %v; want exit 0 on stdin EOF", res, err)
	}
}

// Conn needs both pipes.
func TestConnNeedsBothPipes(t *testing.T) {
	w, _ := execworldtest.NewWorld(t, nil)
	r, err := w.Exec.Start(context.Background(), &execworld.Cmd{Argv: []string{"cat"}, StdinPipe: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Conn() != nil {
		t.Error("Conn of a command without StdoutPipe is not nil")
	}
	r.Stdin().Close()
	r.Wait()
}

// Close stops reading, so a process that keeps printing never blocks on
// a full pipe: it runs to its end.
func TestConnCloseDrains(t *testing.T) {
	w, _ := execworldtest.NewWorld(t, nil)
	r, err := w.Exec.Start(context.Background(), &execworld.Cmd{Argv: sh(`head -c 1000000 /dev/zero; exit 7`), StdinPipe: true, StdoutPipe: true})
	if err != nil {
		t.Fatal(err)
	}
	r.Conn().Close()
	select {
	case <-r.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the process stalled after Conn.Close")
	}
	if res, _ := r.Wait(); res.ExitCode() != 7 {
		t.Fatalf("exit %d, want 7", res.ExitCode())
	}
}

func TestShutdown(t *testing.T) {
	w, _ := execworldtest.NewWorld(t, nil)
	const grace = 300 * time.Millisecond
	for _, c := range []struct {
		name, script string
		signal       syscall.Signal
		canceled     bool
		max          time.Duration
	}{
		{"ends on stdin EOF", "cat >/dev/null; exit 3", 0, false, grace},
		{"ignores stdin EOF", "exec sleep 300", syscall.SIGTERM, true, 2 * grace},
		{"ignores SIGTERM", `trap "" TERM; while :; do sleep 1; done`, syscall.SIGKILL, true, 3 * grace},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := w.Exec.Start(context.Background(), &execworld.Cmd{Argv: sh(c.script), StdinPipe: true, Grace: grace})
			if err != nil {
				t.Fatal(err)
			}
			begin := time.Now()
			if err := r.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			took := time.Since(begin)
			res, _ := r.Wait()
			if res.Status.Signal != c.signal || res.Canceled != c.canceled || took > c.max+time.Second {
				t.Fatalf("after %v: status %v, canceled %v; want signal %v, canceled %v within %v", took, res.Status, res.Canceled, c.signal, c.canceled, c.max)
			}
		})
	}
	// A ctx that ends first kills at once.
	r, err := w.Exec.Start(context.Background(), &execworld.Cmd{Argv: sh(`trap "" TERM; while :; do sleep 1; done`), StdinPipe: true, Grace: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := r.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown past its ctx = %v; want DeadlineExceeded", err)
	}
	if res, _ := r.Wait(); res.Status.Signal != syscall.SIGKILL {
		t.Fatalf("status %v; want SIGKILL", res.Status)
	}
}
