package main

import (
	"io"
	"os"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/internal/testenv"
)

// dsh run -t gives the command the user's TERM, xterm-256color when the
// user has none, and -e TERM=... wins over both. (A testscript has no
// terminal to give dsh, so this is a Go test on the pty helpers.)
func TestRunTTYTERM(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireUserNS(t)
	for _, tc := range []struct {
		name string
		host string // "" is unset
		args []string
		want string
	}{
		{name: "user's", host: "screen-256color", want: "TERM=screen-256color"},
		{name: "unset", want: "TERM=xterm-256color"},
		{name: "-e wins", host: "screen-256color", args: []string{"-e", "TERM=vt100"}, want: "TERM=vt100"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("TERM", tc.host)
			if tc.host == "" {
				os.Unsetenv("TERM")
			}
			args := append([]string{"run", "-t"}, tc.args...)
			args = append(args, "--", "sh", "-c", `echo "TERM=$TERM"`)
			_, out, cmd := onTerminal(t, 24, 80, args...)
			readUntil(t, out, tc.want)
			go io.Copy(io.Discard, out)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("dsh run -t: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("dsh run -t did not exit after the command did")
			}
		})
	}
}
