package docker

import (
	"context"
	"errors"
	"io"

	"github.com/dsh-dev/dsh/sandbox"
)

// initArg is the argument that makes dsh run as the init (pid1.Arg).
const initArg = "__init"

// initClient is what a world needs from the init's client (pid1.Client).
type initClient interface {
	Start(ctx context.Context, p sandbox.ProcessSpec) (sandbox.Process, error)
	Close() error
}

// dialInit starts the init's client on conn.
func dialInit(ctx context.Context, conn io.ReadWriteCloser) (initClient, error) {
	return nil, errors.New("pid1 client not available yet")
}
