package pid1

import (
	"context"
	"testing"

	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/sandbox"
)

// BenchmarkEcho is one line through cat and back: the latency a
// long-lived server in a world (a language server, an MCP server) adds
// per message exchange, through the init, against cat on host pipes.
func BenchmarkEcho(b *testing.B) {
	b.Run("baseline=host-pipes", testenv.EchoHostPipes)
	b.Run("pid1", func(b *testing.B) {
		ip := startInit(b, nil)
		p, err := ip.client.Start(context.Background(), sandbox.ProcessSpec{Argv: []string{"cat"}, Stdin: true})
		if err != nil {
			b.Fatal(err)
		}
		defer func() { p.Stdin().Close(); p.Wait() }()
		testenv.Echo(b, p.Stdin(), p.Stdout())
	})
}
