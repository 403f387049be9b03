package testenv

import (
	"bufio"
	"io"
	"os/exec"
	"testing"
)

// echoLine is a JSON-RPC-sized message, the unit of a long-lived
// server's exchanges.
var echoLine = []byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"textDocument/definition\"}\n")

// Echo writes one line to w and reads one back from r per iteration of
// b: the round trip of a message to `cat` and back.
func Echo(b *testing.B, w io.Writer, r io.Reader) {
	br := bufio.NewReader(r)
	for b.Loop() {
		if _, err := w.Write(echoLine); err != nil {
			b.Fatal(err)
		}
		if _, err := br.ReadBytes('\n'); err != nil {
			b.Fatal(err)
		}
	}
}

// EchoHostPipes is Echo through `cat` on host pipes: the baseline of a
// world's stdio.
func EchoHostPipes(b *testing.B) {
	cmd := exec.Command("cat")
	w, _ := cmd.StdinPipe()
	r, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { w.Close(); cmd.Wait() }()
	Echo(b, w, r)
}
