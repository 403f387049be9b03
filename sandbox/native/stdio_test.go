package native

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/sandbox"
)

// TestDirectStdio: a process of a native world has exactly its three
// pipes (no descriptor of the stdio socket or of the init's session),
// and they are the very pipes dsh holds — passed to dsh, not relayed —
// while the init, which made them, holds none of them any more.
func TestDirectStdio(t *testing.T) {
	testenv.RequireUserNS(t)
	spec := sandbox.DefaultSpec(t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	inst, err := New(&Options{StateDir: stateDir(t)}).Open(ctx, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close()
	p, err := inst.Start(ctx, sandbox.ProcessSpec{
		Argv: []string{"/bin/sh", "-c", `for f in /proc/$$/fd/*; do [ -e "$f" ] && printf '%s=%s\n' "${f##*/}" "$(readlink "$f")"; done; echo end; exec cat`},
		Env:  spec.Env, Stdin: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Wait()
	defer p.Stdin().Close()
	r := bufio.NewReader(p.Stdout())
	fds := map[string]string{}
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the descriptors: %v (so far %v)", err, fds)
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "end" {
			break
		}
		k, v, _ := strings.Cut(line, "=")
		fds[k] = v
	}
	if len(fds) != 3 {
		t.Fatalf("descriptors of a world process: %v, want 0, 1 and 2 only", fds)
	}
	ours := fdTargets(t, os.Getpid())
	init := fdTargets(t, inst.(*instance).l.cmd.Process.Pid)
	if !hasPrefix(init, "socket:") {
		t.Errorf("the init holds no socket (%v): no stdio socket", init)
	}
	for _, fd := range []string{"0", "1", "2"} {
		target := fds[fd]
		if !strings.HasPrefix(target, "pipe:") {
			t.Errorf("fd %s of a world process is %q, want a pipe", fd, target)
		}
		if !ours[target] {
			t.Errorf("fd %s of a world process (%s) is no pipe dsh holds: its stdio is relayed", fd, target)
		}
		if init[target] {
			t.Errorf("the init still holds %s, the world process's fd %s", target, fd)
		}
	}
	if _, err := p.Stdin().Write([]byte("still there\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := r.ReadString('\n'); err != nil || line != "still there\n" {
		t.Errorf("cat through the pipes: %q, %v", line, err)
	}
}

// fdTargets is the set of what pid's descriptors point to.
func fdTargets(t *testing.T, pid int) map[string]bool {
	t.Helper()
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("listing the descriptors of %d: %v", pid, err)
	}
	m := map[string]bool{}
	for _, e := range entries {
		if target, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil {
			m[target] = true
		}
	}
	return m
}

func hasPrefix(set map[string]bool, prefix string) bool {
	for k := range set {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}
