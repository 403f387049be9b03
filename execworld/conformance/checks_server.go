package conformance

import (
	"context"
	"fmt"
	"io"
	"strings"
	"syscall"
	"time"

	"github.com/dsh-dev/dsh/execworld"
)

// A long-lived server (a language server, an MCP stdio server) started
// with Exec.Start outlives the ctx of its start, is driven through
// Running.Conn, and Running.Shutdown ends it within its grace even when
// it ignores stdin EOF (SIGTERM) and SIGTERM too (SIGKILL).
func checkLongLivedServer(ctx context.Context, s *suite) error {
	w, err := s.mainWorld(ctx)
	if err != nil {
		return err
	}
	startCtx, cancel := context.WithCancel(ctx)
	r, err := w.w.Exec.Start(startCtx, &execworld.Cmd{Argv: []string{"cat"}, StdinPipe: true, StdoutPipe: true})
	cancel()
	if err != nil {
		return err
	}
	defer r.Stop()
	time.Sleep(200 * time.Millisecond)
	select {
	case <-r.Done():
		res, _ := r.Wait()
		return fmt.Errorf("cat ended when the ctx of its start was cancelled: %+v", res)
	default:
	}
	conn := r.Conn()
	buf := make([]byte, 5)
	for _, msg := range []string{"ping1", "ping2"} {
		if _, err := io.WriteString(conn, msg); err != nil {
			return fmt.Errorf("writing to cat through Conn: %w", err)
		}
		if _, err := io.ReadFull(conn, buf); err != nil || string(buf) != msg {
			return fmt.Errorf("cat echoed %q, %v through Conn; want %q", buf, err, msg)
		}
	}
	if err := conn.Close(); err != nil {
		return fmt.Errorf("closing Conn: %w", err)
	}
	if res, err := r.Wait(); err != nil || res.ExitCode() != 0 || res.Canceled {
		return fmt.Errorf("cat after Conn.Close: %+v, %v; want it to end on stdin EOF with status 0", res, err)
	}

	const grace = 500 * time.Millisecond
	var problems []string
	for _, c := range []struct {
		script string
		want   syscall.Signal
	}{
		{"exec sleep 300", syscall.SIGTERM},                          // ignores stdin EOF
		{`trap "" TERM; while :; do sleep 1; done`, syscall.SIGKILL}, // ignores SIGTERM too
	} {
		r, err := w.w.Exec.Start(ctx, &execworld.Cmd{Argv: []string{"/bin/sh", "-c", c.script}, StdinPipe: true, Grace: grace})
		if err != nil {
			return err
		}
		begin := time.Now()
		err = r.Shutdown(ctx)
		took := time.Since(begin)
		res, _ := r.Wait()
		// Two graces (EOF, then SIGTERM) and the driver's latency.
		if err != nil || res.Status.Signal != c.want || !res.Canceled || took > 2*grace+3*time.Second {
			problems = append(problems, fmt.Sprintf("Shutdown of %q: %v after %v, status %v, canceled %v; want it ended by %v within 2×%v", c.script, err, took.Round(time.Millisecond), res.Status, res.Canceled, c.want, grace))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("graceful shutdown: %s", strings.Join(problems, "\n"))
	}
	return nil
}
