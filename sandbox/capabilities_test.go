package sandbox_test

import (
	"io"

	"github.com/dsh-dev/dsh/sandbox"
	"github.com/dsh-dev/dsh/sandbox/docker"
	"github.com/dsh-dev/dsh/sandbox/native"
)

// The optional capabilities each driver promises, checked at compile time.
var (
	_ sandbox.Prober = (*native.Driver)(nil)
	_ sandbox.Reaper = (*native.Driver)(nil)
	_ sandbox.Prober = (*docker.Driver)(nil)
	_ sandbox.Reaper = (*docker.Driver)(nil)
	_ io.Closer      = (*docker.Driver)(nil)
)
