package pid1

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"syscall"
	"testing"

	"github.com/dsh-dev/dsh/sandbox"
)

func TestTTYProcessHasTerminalOfItsSize(t *testing.T) {
	ip := startInit(t, nil)
	spec := shell(`test -t 0 && test -t 1 && test -t 2 && stty size && echo err >&2; ps -o tty= -p $$ | grep -q pts && echo ctty`)
	spec.TTY = &sandbox.WindowSize{Rows: 33, Cols: 99}
	out, errb, st := run(t, ip.client, spec)
	if st.Code != 0 {
		t.Fatalf("status %v, output %q", st, out)
	}
	// The terminal turns \n into \r\n, and carries stderr too.
	if got, want := string(out), "33 99\r\nerr\r\nctty\r\n"; got != want {
		t.Errorf("output %q, want %q", got, want)
	}
	if len(errb) != 0 {
		t.Errorf("stderr %q, want it empty: a terminal has one output", errb)
	}
}

// startOnTerminal starts script on a 24x80 terminal with input, and
// returns the process and a reader of the terminal's output.
func startOnTerminal(t *testing.T, ip *initProc, script string) (sandbox.Process, *bufio.Reader) {
	t.Helper()
	spec := shell(script)
	spec.TTY = &sandbox.WindowSize{Rows: 24, Cols: 80}
	spec.Stdin = true
	p, err := ip.client.Start(ctx(t), spec)
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, p.Stderr())
	return p, bufio.NewReader(p.Stdout())
}

func TestTTYResizeAndInput(t *testing.T) {
	ip := startInit(t, nil)
	// The resize and the input travel on different streams, so the shell
	// waits for the new size rather than assuming the order.
	p, out := startOnTerminal(t, ip, `stty size; read line; echo "got $line"; while [ "$(stty size)" = "24 80" ]; do sleep 0.01; done; stty size`)
	if line, _ := out.ReadString('\n'); line != "24 80\r\n" {
		t.Fatalf("first size %q, want 24 80", line)
	}
	if err := p.Resize(sandbox.WindowSize{Rows: 50, Cols: 132}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Stdin().Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	p.Stdin().Close()
	rest, err := io.ReadAll(out)
	if err != nil {
		t.Fatalf("reading the terminal: %v", err)
	}
	// The terminal echoes the typed line, then the shell answers.
	if got, want := string(rest), "hello\r\ngot hello\r\n50 132\r\n"; got != want {
		t.Errorf("after resize and input: %q, want %q", got, want)
	}
	if st, err := p.Wait(); err != nil || st.Code != 0 {
		t.Errorf("Wait() = %v, %v", st, err)
	}
}

func TestTTYJobControlSignal(t *testing.T) {
	// ^C typed on the terminal reaches the foreground job as SIGINT.
	ip := startInit(t, nil)
	p, out := startOnTerminal(t, ip, `echo ready; exec sleep 30`)
	if line, _ := out.ReadString('\n'); !strings.HasPrefix(line, "ready") {
		t.Fatalf("got %q, want ready", line)
	}
	if _, err := p.Stdin().Write([]byte{0x03}); err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, out)
	st, err := p.Wait()
	if err != nil || st.Signal != syscall.SIGINT {
		t.Errorf("after ^C: Wait() = %v, %v; want killed by SIGINT", st, err)
	}
}

func TestTTYErrors(t *testing.T) {
	ip := startInit(t, nil)
	spec := shell(`true`)
	spec.TTY = &sandbox.WindowSize{Rows: 0, Cols: 80}
	if _, err := ip.client.Start(ctx(t), spec); !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("Start with a 0-row terminal: %v, want ErrInvalidSpec", err)
	}
	p, err := ip.client.Start(ctx(t), shell(`true`))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Resize(sandbox.WindowSize{Rows: 1, Cols: 1}); !errors.Is(err, sandbox.ErrNoTTY) {
		t.Errorf("Resize without a terminal: %v, want sandbox.ErrNoTTY", err)
	}
	collect(t, p)
}
