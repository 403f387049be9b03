package native

import (
	"bufio"
	"context"
	"io"
	"os/exec"
	"testing"

	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/sandbox"
)

// BenchmarkEcho is one line through cat and back: the latency a
// long-lived server in a native world (a language server, an MCP server)
// adds per message exchange, against cat on host pipes.
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
		echo(b, p.Stdin(), bufio.NewReader(p.Stdout()))
	})
}
