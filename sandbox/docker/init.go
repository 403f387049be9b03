package docker

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/dsh-dev/dsh/sandbox"
	"github.com/dsh-dev/dsh/sandbox/pid1"
)

// initArg is the argument that makes dsh run as the init.
const initArg = pid1.Arg

// initClient is what a world needs from the init's client (pid1.Client).
type initClient interface {
	Start(ctx context.Context, p sandbox.ProcessSpec) (sandbox.Process, error)
	Close() error
}

// probePath is a program that exists in no image. Starting it makes the
// init answer "not found" without forking anything: one round trip that
// proves the init runs and speaks the protocol.
const probePath = "/.dsh/probe-does-not-exist"

// dialInit starts the init's client on conn and waits until the init
// answers.
func dialInit(ctx context.Context, conn io.ReadWriteCloser) (initClient, error) {
	c, err := pid1.NewClient(conn)
	if err != nil {
		return nil, err
	}
	_, err = c.Start(ctx, sandbox.ProcessSpec{Argv: []string{probePath}, Dir: "/"})
	if !errors.Is(err, pid1.ErrNotFound) {
		c.Close()
		if err == nil {
			err = errors.New("the probe started a program that must not exist")
		}
		return nil, fmt.Errorf("no answer from the init: %w", err)
	}
	return c, nil
}
