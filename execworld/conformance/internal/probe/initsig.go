package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// initSignals are the signals siginit sends PID 1: those whose default
// action ends or stops a process, those Go turns into a crash, and the
// two the kernel never lets a namespace's own processes deliver.
var initSignals = []unix.Signal{
	unix.SIGTERM, unix.SIGHUP, unix.SIGINT, unix.SIGQUIT, unix.SIGABRT,
	unix.SIGSEGV, unix.SIGBUS, unix.SIGILL, unix.SIGFPE, unix.SIGTRAP,
	unix.SIGSYS, unix.SIGSTKFLT, unix.SIGUSR1, unix.SIGUSR2, unix.SIGALRM,
	unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU, unix.SIGXCPU, unix.SIGXFSZ,
	32, 34, 40, 64, unix.SIGKILL, unix.SIGSTOP,
}

// siginit sends every signal of initSignals to PID 1, then to each of its
// threads listed in /proc/1/task (tgkill), one line per attempt. It
// refuses unless PID 1 is a dsh init: without a pid namespace of its own
// the world's PID 1 is the host's init, which must never be signalled.
func siginit() {
	if !pid1IsDshInit() {
		return
	}
	for _, sig := range initSignals {
		fmt.Printf("kill %d %v\n", int(sig), errText(unix.Kill(1, sig)))
	}
	tasks, _ := os.ReadDir("/proc/1/task")
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		for _, sig := range initSignals {
			fmt.Printf("tgkill %d %d %v\n", tid, int(sig), errText(unix.Tgkill(1, tid, sig)))
		}
	}
	// Delivery is asynchronous: give a dying init time to die.
	time.Sleep(500 * time.Millisecond)
}

// pid1IsDshInit reports whether PID 1 is a dsh init, saying "not-init"
// when it is not.
func pid1IsDshInit() bool {
	cmdline, err := os.ReadFile("/proc/1/cmdline")
	if err != nil {
		fmt.Printf("not-init reading /proc/1/cmdline: %v\n", oneLine(err))
		return false
	}
	args := bytes.Split(cmdline, []byte{0})
	if len(args) < 2 || (string(args[1]) != "__init" && string(args[1]) != "__native-init") {
		fmt.Printf("not-init %q\n", bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
		return false
	}
	return true
}

func errText(err error) string {
	if err == nil {
		return "sent"
	}
	return oneLine(err)
}
