package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/internal/testenv"
)

// unixSelfEnv makes this test binary, copied into a world, make a unix
// socket at the variable's path, connect to it and print what it read.
const unixSelfEnv = "DSH_TEST_UNIX_SELF"

func init() {
	if p := os.Getenv(unixSelfEnv); p != "" {
		unixSelfAgent(p)
		os.Exit(0)
	}
}

func unixSelfAgent(path string) {
	l, err := net.Listen("unix", path)
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	go func() {
		if c, err := l.Accept(); err == nil {
			c.Write([]byte("own\n"))
			c.Close()
		}
	}()
	c, err := net.Dial("unix", path)
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	line, _ := bufio.NewReader(c).ReadString('\n')
	fmt.Print("works ", line)
}

// TestRunUnixSockets: by default a command cannot create a unix socket
// (which keeps every host socket out of reach); --unix-sockets, the
// documented opt-out, lets it use one of its own.
func TestRunUnixSockets(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireUserNS(t)
	testenv.RequireCgroups(t)
	ws := t.TempDir()
	agent := agentIn(t, ws)
	for _, c := range []struct {
		flags []string
		want  string
	}{
		{nil, "refused: listen unix /tmp/own.sock: socket: operation not permitted\n"},
		{[]string{"--unix-sockets"}, "works own\n"},
	} {
		args := append(append([]string{"run", "--driver", "native", "--workspace", ws, "--env", unixSelfEnv + "=/tmp/own.sock"}, c.flags...), "--", agent)
		cmd := exec.Command(staticDsh(t), args...)
		cmd.Dir = ws
		out, err := cmd.Output()
		if err != nil || string(out) != c.want {
			t.Errorf("dsh %s: %q, %v; want %q", strings.Join(args, " "), out, err, c.want)
		}
	}
}
