package native

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"

	"github.com/dsh-dev/dsh/sandbox"
)

// runOnce runs argv as PID 1 of a fresh world (exec mode: no pid1
// server) and waits for it. It exercises the setup stage on its own and
// is how Probe proves the setup works.
func (d *Driver) runOnce(ctx context.Context, spec *sandbox.Spec, argv, env []string, out io.Writer) error {
	l, err := d.start(ctx, spec, nil, argv, env, &stdio{out: out, err: out})
	if err != nil {
		return err
	}
	defer l.cleanup()
	done := make(chan error, 1)
	go func() { done <- l.cmd.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = l.cmd.Process.Kill()
		<-done
		err = ctx.Err()
	}
	l.cmd, l.waited = nil, true
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return fmt.Errorf("native: %s: %w", argv[0], err)
	}
	return err
}
