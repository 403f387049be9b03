package pid1

import (
	"bufio"
	"context"
	"io"
	"os/exec"
	"testing"

	"github.com/dsh-dev/dsh/sandbox"
)

// BenchmarkEcho is one line through cat and back: the latency a
// long-lived server in a world (a language server, an MCP server) adds
// per message exchange, through the init, against cat on host pipes.
func BenchmarkEcho(b *testing.B) {
	line := []byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"textDocument/definition\"}\n")
	echo := func(b *testing.B, w io.Writer, r *bufio.Reader) {
		for b.Loop() {
			if _, err := w.Write(line); err != nil {
				b.Fatal(err)
			}
			if _, err := r.ReadBytes('\n'); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("baseline=host-pipes", func(b *testing.B) {
		cmd := exec.Command("cat")
		w, _ := cmd.StdinPipe()
		r, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		defer func() { w.Close(); cmd.Wait() }()
		echo(b, w, bufio.NewReader(r))
	})
	b.Run("pid1", func(b *testing.B) {
		ip := startInit(b, nil)
		p, err := ip.client.Start(context.Background(), sandbox.ProcessSpec{Argv: []string{"cat"}, Stdin: true})
		if err != nil {
			b.Fatal(err)
		}
		defer func() { p.Stdin().Close(); p.Wait() }()
		echo(b, p.Stdin(), bufio.NewReader(p.Stdout()))
	})
}
