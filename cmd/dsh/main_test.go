package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/cmd/dsh/internal/prestart"
)

// A run line is served by the run-only tree exactly as by the whole one:
// the same help, the same usage errors.
func TestRunOnlyTreeIsRunsTree(t *testing.T) {
	for _, args := range [][]string{{"run", "--help"}, {"run", "--no-such-flag"}, {"--config=/nonexistent", "run", "--help"}} {
		if !prestart.RunLine(args) {
			t.Fatalf("prestart.RunLine(%q) = false", args)
		}
		var outs [2]string
		for i, runOnly := range []bool{false, true} {
			root := newRoot(runOnly)
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&out)
			root.SetArgs(args)
			_, err := root.ExecuteC()
			outs[i] = fmt.Sprintf("%s\nerr: %v", out.String(), err)
		}
		if outs[0] != outs[1] {
			t.Errorf("%q: the whole tree says\n%s\nthe run-only tree says\n%s", args, outs[0], outs[1])
		}
	}
}

// The prestart is begun during the package initialisation, before the
// native driver and the CLI's heavier dependencies are initialised: the
// built binary's initialisation order (GODEBUG=inittrace) has package
// prestart before net (whose initialisation waits for almost every
// other package's, and which the native driver needs), well before main.
func TestPrestartInitialisedEarly(t *testing.T) {
	cmd := exec.Command(staticDsh(t), "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	var order []string
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "init" {
			order = append(order, f[1])
		}
	}
	at := func(p string) int { return slices.Index(order, p) }
	pre, net, native, main := at("github.com/dsh-dev/dsh/cmd/dsh/internal/prestart"), at("net"), at("github.com/dsh-dev/dsh/sandbox/native"), at("main")
	if pre < 0 || net < 0 || native < 0 || main < 0 || pre > net || pre > native || main-pre < 100 {
		t.Errorf("initialisation order: prestart %d, net %d, native %d, main %d of %d packages; want prestart before net and native, long before main", pre, net, native, main, len(order))
	}
}
