package native

import (
	"context"
	"testing"

	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/sandbox"
)

// BenchmarkEcho is one line through cat and back: the latency a
// long-lived server in a native world (a language server, an MCP server)
// adds per message exchange, against cat on host pipes.
func BenchmarkEcho(b *testing.B) {
	b.Run("baseline=host-pipes", testenv.EchoHostPipes)
	b.Run("native", func(b *testing.B) {
		testenv.RequireUserNS(b)
		spec := sandbox.DefaultSpec(b.TempDir())
		in, err := New(&Options{StateDir: stateDir(b)}).Open(context.Background(), spec, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer in.Close()
		p, err := in.Start(context.Background(), sandbox.ProcessSpec{Argv: []string{"cat"}, Env: spec.Env, Stdin: true})
		if err != nil {
			b.Fatal(err)
		}
		defer func() { p.Stdin().Close(); p.Wait() }()
		testenv.Echo(b, p.Stdin(), p.Stdout())
	})
}
