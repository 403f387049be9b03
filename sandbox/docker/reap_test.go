package docker

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/sandbox"
)

// deadPID returns the pid of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// TestReapRemovesLeftoversOfDeadOwnerOnly: Reap removes a world whose owner process is
// gone (a crashed dsh); a
// world whose owner runs is left alone.
func TestReapRemovesLeftoversOfDeadOwnerOnly(t *testing.T) {
	cli := newClient(t)
	requireImage(t, cli, fixtureImage)
	open := func(d *Driver) *world { return openFixtureWorld(t, cli, d) }
	live := open(rawDriver(t, "cat"))
	crashed := rawDriver(t, "cat")
	crashed.owner.pid = deadPID(t)
	dead := open(crashed)
	// (No check that it exists now: a dsh test in another package may
	// reap it first, which is just as right.)
	if dead.containerID == "" {
		t.Fatal("the dead owner's world has no container")
	}

	// A new dsh reaps once, before it opens worlds (sandbox.Reaper).
	if err := rawDriver(t, "cat").Reap(context.Background()); err != nil {
		t.Fatal(err)
	}
	if left := worldResources(t, cli, dead.id); len(left) > 0 {
		t.Errorf("after Reap, the dead owner's world still has %v", left)
	}
	if left := worldResources(t, cli, live.id); len(left) != 1 {
		t.Errorf("after Reap, the live owner's world has %v, want its container", left)
	}
}

func TestOwnerGone(t *testing.T) {
	me := self()
	if ownerGone(me.labels("w", nil), me.host) {
		t.Error("ownerGone(this process) = true")
	}
	dead := me
	dead.pid = deadPID(t)
	if !ownerGone(dead.labels("w", nil), me.host) {
		t.Error("ownerGone(exited process) = false")
	}
	reused := me
	reused.start = "1" // same pid, another start time: the pid was reused
	if !ownerGone(reused.labels("w", nil), me.host) {
		t.Error("ownerGone(pid reused by another process) = false")
	}
	if ownerGone(dead.labels("w", nil), "another-host") {
		t.Error("ownerGone(owner on another host) = true; another host's resources are not ours to judge")
	}
	if ownerGone(map[string]string{sandbox.LabelManaged: "true"}, me.host) {
		t.Error("ownerGone(no owner labels) = true")
	}
}

func TestReapHostFilesOnlyOldAndDead(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour)
	mk := func(name string, mtime time.Time) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Join(p, "egress"), 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, mtime, mtime)
		return p
	}
	dead := mk("dsh-world-aaaaaaaaaaaa-1", old)
	liveDir := mk("dsh-world-bbbbbbbbbbbb-2", old)
	fresh := mk("dsh-world-cccccccccccc-3", time.Now())
	other := mk("not-dsh-4", old)
	if err := reapHostFiles(dir, map[string]bool{"bbbbbbbbbbbb": true}, time.Now().Add(-hostFilesGrace)); err != nil {
		t.Fatal(err)
	}
	for p, wantGone := range map[string]bool{dead: true, liveDir: false, fresh: false, other: false} {
		_, err := os.Stat(p)
		if gone := os.IsNotExist(err); gone != wantGone {
			t.Errorf("%s: removed = %v, want %v", filepath.Base(p), gone, wantGone)
		}
	}
}

// The placeholders a world of a dead dsh left in its workspace go with
// its journal; a live dsh's stay (no docker engine needed).
func TestReapPlaceholdersOfDeadOwnersOnly(t *testing.T) {
	dir := t.TempDir()
	me := self()
	dead := me
	dead.pid = deadPID(t)
	// What a dsh that died between its placeholders' plan and their
	// record leaves; the sandbox package's tests cover the rest.
	leave := func(o owner, world string) string {
		ws := t.TempDir()
		if err := os.Mkdir(filepath.Join(ws, ".dsh"), 0o755); err != nil {
			t.Fatal(err)
		}
		journal := "ws \"" + ws + "\"\nplan \".dsh\" dir\n"
		if err := os.WriteFile(filepath.Join(dir, o.journalName(world)), []byte(journal), 0o600); err != nil {
			t.Fatal(err)
		}
		return ws
	}
	deadWS, liveWS := leave(dead, "a"), leave(me, "b")
	if err := reapPlaceholders(dir, me.host); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(deadWS, ".dsh")); !os.IsNotExist(err) {
		t.Errorf("the dead owner's placeholder is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(liveWS, ".dsh")); err != nil {
		t.Errorf("the live owner's placeholder is gone: %v", err)
	}
	left, _ := os.ReadDir(dir)
	if len(left) != 1 || left[0].Name() != me.journalName("b") {
		t.Errorf("journals left: %v, want the live owner's alone", left)
	}
}
