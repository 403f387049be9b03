package nsinit

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-dev/dsh/sandbox"
	"github.com/dsh-dev/dsh/sandbox/native/initspawn"
	"github.com/dsh-dev/dsh/sandbox/pid1"
)

// portEnv carries the relay's port from stage 1 to stage 2 (no variable:
// no egress); unixEnv, set to 1, carries Spec.UnixSockets; stdioEnv, set
// to 1, says FDStdio is there.
const (
	portEnv  = "DSH_NATIVE_PROXY_PORT"
	unixEnv  = "DSH_NATIVE_UNIX_SOCKETS"
	stdioEnv = "DSH_NATIVE_STDIO"
	// forkGroupEnv carries the descriptor number of Config.ForkGroup's
	// file to stage 2 (no variable: none).
	forkGroupEnv = "DSH_NATIVE_FORK_GROUP"
)

// RootEnv names, at the spawn, the mount point of the world's root (the
// state directory): the init makes the host's view there before its
// release (prepareHostView).
const RootEnv = initspawn.RootEnv

// execDropErr is the result of dropExecPrivileges on every thread during
// package initialisation of stage 1: nil when done, an error wrapping
// ENOTSUP when cgo is linked (stage 1 then confines its locked thread
// and execs), anything else a failure stage 1 reports.
var execDropErr error

// idsErr is the result of awaitIDs in package initialisation of stage 1,
// which stage 1 reports; idsTime is how long it took (DSH_NATIVE_TRACE).
var (
	idsErr  error
	idsTime time.Duration
)

// execDropTime is how long that took, for DSH_NATIVE_TRACE; execDropEarly
// says the entry point of dsh-init had done it and it was only verified.
var (
	execDropTime  time.Duration
	execDropEarly bool
)

func init() {
	if len(os.Args) > 1 && os.Args[1] == Arg && len(os.Args) == 2 {
		// Now the runtime has the fewest threads it will ever have (3
		// measured: the main one, sysmon and one more; stage 1 later has
		// 4-5), so each of the 44 all-threads rounds is cheapest; the
		// template thread LockOSThread starts is cloned after it and
		// inherits the result. The setup needs none of what is dropped.
		// dsh-init has done it all at its entry point, before there was
		// a second thread (cmd/dsh-init): then no round is needed.
		t0 := time.Now()
		if execDropEarly = execPrivilegesDropped(); !execDropEarly {
			execDropErr = dropExecPrivileges(syscall.AllThreadsSyscall)
		}
		execDropTime = time.Since(t0)
		// The ids, while the runtime has the fewest threads (each change
		// is a round over all of them), and before the parent-death
		// signal, which changing them clears.
		t1 := time.Now()
		idsErr = awaitIDs()
		idsTime = time.Since(t1)
		// Stage 1 changes credentials of this thread and then calls
		// execve from it, so it must stay on one thread. Package init
		// runs on the main thread; keep the main goroutine there.
		runtime.LockOSThread()
		// Die with dsh. Go's own Pdeathsig check misfires for a child
		// in a new pid namespace (its parent pid reads as 0), so the
		// init sets it itself.
		_ = unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0)
	}
}

// Main runs the init stage named by os.Args (after Arg) and returns the
// process exit status: success ends in execve, or in serving pid1 until
// the driver closes the connection.
func Main() int {
	stage := ""
	if len(os.Args) > 2 {
		stage = os.Args[2]
	}
	switch stage {
	case "":
		// stage1 returns nil only after serving in-process.
		if err := stage1(); err != nil {
			reportFailure(err)
			return 125
		}
		return 0
	case StageServe:
		if err := stage2(); err != nil {
			reportFailure(err)
			return 125
		}
		return 0
	case StageNoop:
		return 0
	default:
		fmt.Fprintf(os.Stderr, "dsh: unknown init stage %q\n", stage)
		return 2
	}
}

// stage1 builds the sandbox and confines the locked thread, then
// executes stage 2 (or the configured command) from it.
func stage1() error {
	t0 := time.Now()
	unix.Close(FDExe)
	if idsErr != nil {
		return idsErr
	}
	// While dsh makes the world (a prestarted init: while it loads its
	// configuration), encoding/json builds its caches of the Config's
	// types, which decoding it would otherwise build after the release.
	_, _ = json.Marshal(&Config{})
	warmed := time.Since(t0)
	view := prepareHostView(os.Getenv(RootEnv))
	viewed := time.Since(t0) - warmed
	msg, trees, err := awaitRelease()
	if err != nil {
		return err
	}
	released := time.Now()
	cfg, err := decodeConfig(msg)
	if err != nil {
		return err
	}
	decoded := time.Since(released)
	cfg.forkGroup = -1
	if cfg.ForkGroup {
		if len(trees) == 0 {
			return errors.New("native init: dsh sent no descriptor of the processes' cgroup")
		}
		cfg.forkGroup, trees = trees[len(trees)-1], trees[:len(trees)-1]
	}
	cfg.trees = trees
	if !cfg.Egress {
		unix.Close(FDBroker) // no way out
	}
	if cfg.Trees && len(cfg.trees) != cfg.wantTrees() {
		return fmt.Errorf("native init: dsh sent %d mounts, want %d", len(cfg.trees), cfg.wantTrees())
	}
	if execDropErr != nil && !errors.Is(execDropErr, syscall.ENOTSUP) {
		return execDropErr
	}
	tr := newTracer(cfg.Trace)
	if cfg.TraceSpawn != 0 {
		tr.note("exec, runtime", t0.Sub(time.Unix(0, cfg.TraceSpawn)))
	}
	tr.note("ids", idsTime)
	tr.note("caches", warmed)
	if view != nil {
		tr.note("host view", viewed)
	}
	tr.note("release", released.Sub(t0)-warmed-viewed)
	tr.note("config", decoded)
	if execDropEarly {
		tr.note("drop(exec, entry)", execDropTime)
	} else {
		tr.note("drop(exec, init)", execDropTime)
	}
	if err := setIPC(cfg.IPC); err != nil {
		return err
	}
	cfg.upperFD = -1
	if err := buildRoot(cfg, view); err != nil {
		return err
	}
	if err := sendUpper(cfg); err != nil {
		return err
	}
	host := cfg.Hostname
	if host == "" {
		host = "dsh"
	}
	tr.mark("root")
	if err := unix.Sethostname([]byte(host)); err != nil {
		return fmt.Errorf("setting hostname: %w", err)
	}
	if err := loopbackUp(); err != nil {
		return err
	}
	if err := setRlimits(cfg.Rlimits); err != nil {
		return err
	}
	if err := unix.Chdir(cfg.Workspace); err != nil {
		return fmt.Errorf("entering the workspace: %w", err)
	}
	tr.mark("net+rlimits")
	prog, err := decodeFilter(cfg.Seccomp)
	tr.mark("filter")
	if err != nil {
		return err
	}
	path, argv, env := "/proc/self/exe", []string{os.Args[0], Arg, StageServe}, []string(nil)
	if cfg.Egress {
		env = append(env, portEnv+"="+strconv.Itoa(cfg.ProxyPort))
	}
	if cfg.UnixSockets {
		env = append(env, unixEnv+"=1")
	}
	if cfg.Stdio {
		env = append(env, stdioEnv+"=1")
	}
	if cfg.forkGroup >= 0 {
		env = append(env, forkGroupEnv+"="+strconv.Itoa(cfg.forkGroup))
	}
	if len(cfg.Exec) > 0 {
		argv, env = cfg.Exec, cfg.ExecEnv
		if path, err = sandbox.LookPath(argv[0], sandbox.PathOf(env), ""); err != nil {
			return err
		}
	}
	// Nothing but stdio and (for stage 2) the ready pipe crosses execve.
	if err := unix.CloseRange(FDSync, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fmt.Errorf("marking descriptors close-on-exec: %w", err)
	}
	allThreads := execDropErr == nil
	if !allThreads {
		// cgo: only the locked thread, which calls execve below.
		if err := dropExecPrivileges(threadSyscall); err != nil {
			return err
		}
	}
	if len(cfg.Exec) == 0 && allThreads {
		// Every thread can be confined at once: serve from this
		// process, saving the second start of the binary.
		if err := dropPrivileges(syscall.AllThreadsSyscall, cfg.UID, cfg.GID, cfg.Groups); err != nil {
			return err
		}
		tr.mark("drop(all threads)")
		if err := loadFilter(prog, true); err != nil {
			return err
		}
		tr.mark("seccomp")
		os.Clearenv()
		// Every thread is confined alike now, and nothing more is done
		// to one thread alone: the main goroutine may run on any, so
		// that serving never waits for a hand-off to the thread it was
		// locked to.
		runtime.UnlockOSThread()
		return serve(tr, cfg.ProxyPort, cfg.Egress, cfg.UnixSockets, cfg.Stdio, cfg.forkGroup)
	}
	if len(cfg.Exec) == 0 {
		pass := []int{FDReady}
		if cfg.forkGroup >= 0 {
			pass = append(pass, cfg.forkGroup)
		}
		if cfg.Egress {
			pass = append(pass, FDBroker)
		}
		if cfg.Stdio {
			pass = append(pass, FDStdio)
		}
		for _, fd := range pass {
			if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, 0); err != nil {
				return fmt.Errorf("passing descriptor %d to stage 2: %w", fd, err)
			}
		}
	}
	if err := dropPrivileges(threadSyscall, cfg.UID, cfg.GID, cfg.Groups); err != nil {
		return err
	}
	if err := loadFilter(prog, false); err != nil {
		return err
	}
	if len(cfg.Exec) > 0 {
		// 0x01: set up; the pipe closes on a successful execve, and an
		// error message follows if it fails.
		if _, err := unix.Write(FDReady, []byte{1}); err != nil {
			return fmt.Errorf("reporting readiness: %w", err)
		}
	}
	err = syscall.Exec(path, argv, env)
	return fmt.Errorf("executing %s: %w", argv[0], err)
}

// stage2 is the confined init after execve: it serves the egress
// relay and pid1.
func stage2() error {
	port, _ := strconv.Atoi(os.Getenv(portEnv))
	unixSockets := os.Getenv(unixEnv) == "1"
	stdio := os.Getenv(stdioEnv) == "1"
	forkGroup := -1
	if v := os.Getenv(forkGroupEnv); v != "" {
		fd, err := strconv.Atoi(v)
		if err != nil || fd <= FDStdio {
			return fmt.Errorf("%s=%q is not a descriptor stage 1 passed", forkGroupEnv, v)
		}
		forkGroup = fd
	}
	os.Clearenv()
	return serve(newTracer(false), port, port != 0, unixSockets, stdio, forkGroup)
}

// serve runs the confined init: pid1 over stdin/stdout, with the egress
// relay (with egress) and the world filter. It reports readiness once
// both are in place.
// pid1.Run makes the init non-dumpable before anything of the world
// runs (after opening what it needs of its own /proc entry).
func serve(tr *tracer, port int, egress, unixSockets, stdio bool, forkGroup int) error {
	cfg := &pid1.Config{Filter: true, UnixSockets: unixSockets}
	if forkGroup >= 0 {
		// pid1.Run marks it close-on-exec, as the stdio socket.
		cfg.ForkGroup = os.NewFile(uintptr(forkGroup), "tasks")
	}
	if stdio {
		// pid1.Run marks it close-on-exec with every descriptor above
		// stderr: no process of the world inherits it.
		c, err := unixConn(FDStdio, "stdio")
		if err != nil {
			return err
		}
		cfg.Stdio = c
	}
	if egress {
		c, err := unixConn(FDBroker, "egress broker")
		if err != nil {
			return err
		}
		cfg.Egress = c
		cfg.ProxyAddr = "127.0.0.1:" + strconv.Itoa(port)
	}
	// Where the world's processes share the init's cgroup, the runtime's
	// idle threads are made beside the relay and the world filter (every
	// thread is confined alike by now: a new one is cloned from a confined
	// one, and the world filter syncs to all), on a second P while dsh,
	// waiting for the readiness, leaves its core idle; the readiness waits
	// for them, for the driver counts them (fitPids). Serving then needs
	// one P (the spawn's GOMAXPROCS). With a group of their own, the
	// runtime starts threads when it needs them.
	procs := runtime.GOMAXPROCS(0)
	warm := make(chan struct{})
	if cfg.ForkGroup == nil {
		runtime.GOMAXPROCS(2)
		go func() {
			prewarmThreads(InitThreads)
			close(warm)
		}()
	} else {
		close(warm)
	}
	cfg.Ready = func() error {
		tr.mark("relay+filter")
		<-warm
		runtime.GOMAXPROCS(procs)
		tr.mark("threads")
		ready := os.NewFile(FDReady, "ready")
		defer ready.Close()
		if _, err := ready.Write([]byte{0}); err != nil {
			return fmt.Errorf("reporting readiness: %w", err)
		}
		return nil
	}
	if code := pid1.Run(cfg); code != 0 {
		return fmt.Errorf("pid1 ended with status %d", code)
	}
	return nil
}

// unixConn takes over the inherited unix socket fd.
func unixConn(fd int, name string) (*net.UnixConn, error) {
	f := os.NewFile(uintptr(fd), name)
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, fmt.Errorf("%s: descriptor %d is not a unix socket", name, fd)
	}
	return uc, nil
}

// prewarmThreads makes the Go runtime hold n idle threads: n goroutines
// each lock a thread at the same time, then let go of it. It returns
// once every one has let go, so the threads are idle and the next
// blocking syscall reuses one; returning earlier, the runtime could start
// yet another thread after the driver has counted them (fitPids).
func prewarmThreads(n int) {
	var locked, unlocked sync.WaitGroup
	release := make(chan struct{})
	for i := 0; i < n; i++ {
		locked.Add(1)
		unlocked.Add(1)
		go func() {
			defer unlocked.Done()
			runtime.LockOSThread()
			locked.Done()
			<-release
			runtime.UnlockOSThread()
		}()
	}
	locked.Wait()
	close(release)
	unlocked.Wait()
}
