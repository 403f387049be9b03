package native

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/dsh-dev/dsh/sandbox"
	"github.com/dsh-dev/dsh/sandbox/native/initspawn"
	"github.com/dsh-dev/dsh/sandbox/native/nsinit"
	"github.com/dsh-dev/dsh/sandbox/pid1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// initProc is an init being spawned: the process in its namespaces and
// dsh's ends of everything it inherits. It needs nothing of the world's
// plan but who the init runs as (spawnFor): the world's configuration
// reaches it later, with its release (nsinit.Config on the sync
// socket). So it is spawned while the host side still makes the world's
// state, placeholders and egress, and can be spawned before the world is
// even asked for (Prestart).
type initProc struct {
	spawnFor
	cmd           *exec.Cmd
	syncW, readyR *os.File      // the sync socket and the ready pipe
	ctlR, ctlW    *os.File      // the pid1 session (serve mode)
	stdio         *net.UnixConn // the stdio socket (serve mode)
	broker        *net.UnixConn // the egress broker connection
	exeFile       *os.File
	exeSrc        initSource
	// cgDirs are the cgroup v1 groups (one per hierarchy) the init is
	// to be born in, if the spawner thread may move there; bornIn says
	// it was.
	cgDirs []string
	bornIn bool
	began  time.Time
	done   chan struct{} // closed once the spawn is done; err is its result
	err    error
	// child are the init's ends, closed once it holds them.
	child []*os.File
	// pre is a prestarted init's cgroup (v1), nil once a world took it.
	pre *preCgroup
	// unlimited says it was prestarted for a world without limits, in
	// no cgroup.
	unlimited bool
}

// preCgroup is the cgroup v1 Prestart makes and starts its init in while
// dsh loads its configuration. It is named after the world ID Prestart
// reserves (sandbox.ReserveWorldID), which the next world minted takes;
// that world adopts the group, given its limits before the init is
// released, so nothing of the world runs outside them. Named like a
// world's, with this process as owner, it is reaped if dsh dies.
type preCgroup struct {
	id     string
	cg     *cgroupV1 // nil if none could be made (err)
	err    error
	placed chan error // the init is in cg: born there, or placed by its pid
}

// newPreCgroup makes the prestarted init's cgroup under parent, named
// for the world worldID, before its spawn: the init is born in it
// (spawner.go). Nil if the world's name is refused.
func newPreCgroup(parent, worldID string) *preCgroup {
	id, err := stateName(worldID)
	if err != nil {
		return nil
	}
	pc := &preCgroup{id: id, placed: make(chan error, 1)}
	g, err := newCgroup(parent, id, &specs.LinuxResources{})
	if err == nil {
		pc.cg = g.(*cgroupV1)
	}
	pc.err = err
	return pc
}

// placeOnceRunning places the prestarted init in its cgroup by its pid
// once it runs, where it could not be born there (spawnIn), and reports
// the result on pc.placed.
func (ip *initProc) placeOnceRunning() {
	pc := ip.pre
	if pc == nil {
		return
	}
	if pc.cg == nil {
		pc.placed <- pc.err
		return
	}
	go func() {
		if err := ip.wait(); err != nil {
			pc.placed <- err
			return
		}
		pid := ip.cmd.Process.Pid
		protectInit(pid)
		if ip.bornIn {
			pc.placed <- nil
			return
		}
		pc.placed <- addToCgroup(pc.cg, pid)
	}()
}

// spawnFor is what an init is spawned for; an init spawned for one
// serves another that is the same (same).
type spawnFor struct {
	serve  bool
	mapped bool // a root caller: the init runs as the host range's root
	ids    idRange
	exe    string // dsh's own binary, the last source of the init
	base   string // the state directory, which holds the init's file
	// embedded allows the embedded init (no Options.Executable).
	embedded bool
	cgParent string // the cgroup parent of its world (a prestarted init's cgroup)
	stderr   io.Writer
	cgroupFD int    // cgroup v2: the init is born in it; -1 if not
	io3      *stdio // exec mode: the init's standard streams
}

// same reports whether an init spawned for f serves g too. The writers
// are compared by identity, and only as files: any other writer (which
// need not even be comparable) is never the same.
func (f spawnFor) same(g spawnFor) bool {
	fw, gw := f.stderr, g.stderr
	f.stderr, g.stderr = nil, nil
	if f != g {
		return false
	}
	if fw == nil || gw == nil {
		return fw == nil && gw == nil
	}
	ff, ok1 := fw.(*os.File)
	gf, ok2 := gw.(*os.File)
	return ok1 && ok2 && ff == gf
}

// newInitProc makes the channels and the command of an init for f.
func newInitProc(f spawnFor) (*initProc, error) {
	ip := &initProc{spawnFor: f}
	ok := false
	defer func() {
		if !ok {
			ip.closeAll()
		}
	}()
	ch, err := initspawn.NewChannels(f.serve)
	if err != nil {
		return nil, err
	}
	ip.syncW, ip.readyR, ip.ctlW, ip.ctlR, ip.child = ch.Sync, ch.Ready, ch.CtlW, ch.CtlR, ch.Child
	if ip.broker, err = fileUnixConn(ch.Broker); err != nil {
		ch.Stdio.Close() // nil-safe
		return nil, fmt.Errorf("native: egress broker: %w", err)
	}
	if f.serve {
		if ip.stdio, err = fileUnixConn(ch.Stdio); err != nil {
			return nil, fmt.Errorf("native: stdio: %w", err)
		}
	}
	if err := ip.openInit(); err != nil {
		return nil, err
	}
	ok = true
	return ip, nil
}

// newCmd is the init's command, for one attempt to start it.
func (ip *initProc) newCmd() *exec.Cmd {
	ch := &initspawn.Channels{Child: ip.child}
	cmd := &exec.Cmd{Path: initspawn.Path, Args: initspawn.Argv(), Env: initspawn.Env(ip.base), ExtraFiles: ch.ExtraFiles(ip.exeFile)}
	if ip.serve {
		stdin, stdout := ch.Session()
		cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, ip.stderr
	} else if ip.io3 != nil {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = ip.io3.in, ip.io3.out, ip.io3.err
	}
	cmd.SysProcAttr = initspawn.Attr(ip.mapped, ip.cgroupFD)
	return cmd
}

// mapIDs writes the id maps of the init's user namespace, then tells the
// init they are written (initspawn.MapIDs).
func (ip *initProc) mapIDs(pid int) error {
	return initspawn.MapIDs(pid, ip.syncW, ip.mapped, ip.ids.uid, ip.ids.gid)
}

// openInit opens the best source of the init not refused yet
// (initexe.go).
func (ip *initProc) openInit() error {
	f, src, err := openInitSource(ip.embedded, ip.base, ip.exe)
	if err != nil {
		return err
	}
	ip.exeFile, ip.exeSrc = f, src
	return nil
}

// begin starts the spawn on the spawner thread and returns at once; wait
// gives its result.
func (ip *initProc) begin() {
	ip.done = make(chan struct{})
	ip.began = time.Now()
	go func() {
		ip.err = ip.run()
		close(ip.done)
	}()
}

func (ip *initProc) run() error {
	for {
		cmd := ip.newCmd()
		born, err := startPinned(cmd, ip.cgDirs, ip.mapIDs)
		if err == nil {
			ip.cmd, ip.bornIn = cmd, born
			ip.closeChild()
			return nil
		}
		if !refusedInit(ip.exeSrc, err) {
			return err
		}
		// Refused to execute (initexe.go): the next source, now and
		// for every later world.
		initRefused[ip.exeSrc].Store(true)
		ip.closeExe()
		if err := ip.openInit(); err != nil {
			return err
		}
	}
}

// wait returns the spawn's result, to every goroutine that asks; the
// init runs once it is nil.
func (ip *initProc) wait() error {
	if ip.done == nil {
		return errors.New("native: the init was never spawned")
	}
	<-ip.done
	return ip.err
}

// release sends the world's configuration and mounts: the init sets the
// world up with them.
func (ip *initProc) release(cfg *nsinit.Config, trees []int) error {
	b, err := cfg.Encode()
	if err != nil {
		return err
	}
	return release(ip.syncW, b, trees)
}

// kill ends the init, if it was spawned and not waited for already, and
// waits for it; then closes dsh's ends (and removes the cgroup of a
// prestarted init no world took).
func (ip *initProc) kill(waited bool) {
	pc := ip.pre // no world took it
	ip.pre = nil
	if pc != nil && pc.cg != nil {
		// A placement names the init by pid: it ends before the init
		// can be reaped and its pid reused.
		<-pc.placed
	}
	if !waited && ip.wait() == nil {
		if ip.ctlW != nil {
			ip.ctlW.Close() // ends pid1's session first
		}
		_ = ip.cmd.Process.Kill()
		_ = ip.cmd.Wait()
	}
	if pc != nil && pc.cg != nil {
		_ = pc.cg.destroy()
	}
	ip.closeAll()
}

func (ip *initProc) closeChild() {
	for _, f := range ip.child {
		f.Close()
	}
	ip.child = nil
	ip.closeExe()
}

func (ip *initProc) closeExe() {
	if ip.exeFile != nil && ip.exeSrc != initMemfd { // the process's memfd is kept
		ip.exeFile.Close()
	}
	ip.exeFile = nil
}

func (ip *initProc) closeAll() {
	ip.closeChild()
	for _, f := range []*os.File{ip.syncW, ip.readyR, ip.ctlR, ip.ctlW} {
		f.Close() // nil-safe: a field never set
	}
	for _, c := range []*net.UnixConn{ip.stdio, ip.broker} {
		if c != nil {
			c.Close()
		}
	}
}

// The init Prestart began, for the first world this process opens with
// a default Driver.
var prestart struct {
	mu sync.Mutex
	// done is closed once the prestart's goroutine set ip (or gave up);
	// nil when no prestart is pending.
	done chan struct{}
	ip   *initProc
}

// Prestart begins spawning the init of the next world this process
// opens, before the world is asked for: a command that will open one
// (dsh run) calls it first thing, so that the init's clone, execve and
// runtime start overlap loading the configuration and planning. limited
// says whether that world is expected to have limits (on cgroup v1, a
// cgroup the init is born in) or not (no cgroup). All of it runs in the
// background; Prestart returns at once. Open takes the init when it was
// spawned for what the world needs (a serving init of a Driver with
// default Options; with limits, in the cgroup it made for it; without,
// in none); otherwise, or if no world is opened, it is killed
// (DropPrestart) or ends with dsh (it waits for its release on a socket
// whose other end dies with dsh, and has dsh's death as its parent-death
// signal). It never runs anything before a world's release. Calling it
// again while one is pending does nothing.
func Prestart(limited bool) {
	prestart.mu.Lock()
	defer prestart.mu.Unlock()
	if prestart.done != nil || unified() {
		// cgroup v2: the init is born in the world's cgroup, which needs
		// the world's plan.
		return
	}
	done := make(chan struct{})
	prestart.done = done
	// The seccomp program of a world of this caller, ready for its plan
	// (an unprivileged caller's refuses System V shared memory), and
	// encoding/json's caches of the Config's types for its release and of
	// pid1's messages for its first process: made once the init is
	// spawned, which needs the second core first.
	warm := func() {
		_, _ = filterProgram(os.Geteuid() != 0)
		_, _ = (&nsinit.Config{}).Encode()
		_ = pid1.WarmCodec()
	}
	if e := initspawn.Take(); e != nil {
		// Reserved now, before anything else of the process mints an
		// ID; the init is taken beside the CLI's own start.
		if sandbox.CheckWorldID(e.WorldID) == nil {
			sandbox.ReserveWorldIDOf(e.WorldID)
		}
		go func() {
			ip := adoptEarly(e)
			prestart.mu.Lock()
			prestart.ip = ip
			prestart.mu.Unlock()
			close(done)
			warm()
		}()
		return
	}
	// Reserved now, before anything else of the process mints an ID.
	id := sandbox.ReserveWorldID()
	go func() {
		defer close(done)
		f, err := defaultSpawn()
		if err != nil {
			go warm()
			return // the world's Open reports it, with its plan
		}
		// The cgroup is made beside the init's descriptors.
		made := make(chan *preCgroup, 1)
		if limited {
			go func() { made <- newPreCgroup(f.cgParent, id) }()
		} else {
			made <- nil
		}
		ip, err := newInitProc(f)
		pc := <-made
		if err != nil {
			go warm()
			if pc != nil && pc.cg != nil {
				_ = pc.cg.destroy()
			}
			return
		}
		if ip.pre = pc; pc != nil && pc.cg != nil {
			ip.cgDirs = pc.cg.dirs
		}
		ip.unlimited = !limited
		ip.begin()
		ip.placeOnceRunning()
		go func() { _ = ip.wait(); warm() }()
		prestart.mu.Lock()
		prestart.ip = ip
		prestart.mu.Unlock()
	}()
}

// adoptEarly makes the init initspawn.Begin spawned during dsh's package
// initialisation the prestarted one, or kills it (nil). Begin spawns
// what defaultSpawn would, from the same decisions (taken by initspawn
// for both); takePrestart still compares it with what the world needs.
func adoptEarly(e *initspawn.Early) *initProc {
	f := spawnFor{serve: true, mapped: e.Mapped, ids: idRange{uid: e.UID, gid: e.GID}, exe: e.Exe, base: e.Base,
		embedded: true, cgParent: cgroupParent, cgroupFD: -1}
	if e.Trace {
		f.stderr = os.Stderr // the init's step timings
	}
	// The process, for Wait and Kill: nothing of it runs in dsh.
	ip := &initProc{spawnFor: f, cmd: &exec.Cmd{Process: e.Process}, syncW: e.Sync, readyR: e.Ready,
		ctlR: e.CtlR, ctlW: e.CtlW, bornIn: e.BornIn, began: e.Began, done: make(chan struct{})}
	close(ip.done)
	var pc *preCgroup // its world's cgroup, for a world with limits
	if ip.unlimited = !e.Limited; !ip.unlimited {
		pc = &preCgroup{id: e.Name, err: e.GroupsErr, placed: make(chan error, 1)}
		ip.pre = pc
	}
	fail := func() *initProc {
		ip.kill(false)
		if e.Groups != nil {
			for _, d := range e.Groups {
				_ = os.Remove(d)
			}
		}
		e.Stdio.Close()
		e.Broker.Close()
		if e.Memfd != nil {
			e.Memfd.Close()
		}
		return nil
	}
	if sandbox.CheckWorldID(e.WorldID) != nil {
		return fail()
	}
	var err error
	if ip.stdio, err = fileUnixConn(e.Stdio); err != nil {
		return fail()
	}
	if ip.broker, err = fileUnixConn(e.Broker); err != nil {
		return fail()
	}
	if e.Groups != nil { // Limited: pc is set
		// Made by initspawn where newPreCgroup would: this is the same
		// group, with none of its limits yet.
		g, err := newCgroup(f.cgParent, e.Name, &specs.LinuxResources{})
		if err != nil {
			return fail()
		}
		pc.cg = g.(*cgroupV1)
	}
	if e.Memfd != nil {
		ip.exeSrc = initMemfd
		// The process's memfd: every later world of dsh runs it too.
		memfdOnce.Do(func() { memfdFile = e.Memfd })
		if memfdFile != e.Memfd {
			e.Memfd.Close() // the init holds what it executes
		}
	}
	ip.placeOnceRunning()
	if e.Trace {
		fmt.Fprintf(os.Stderr, "dsh host: %-18s %8.3f ms before the driver took it\n", "early spawn", ms(time.Since(e.Began)))
	}
	return ip
}

// takePrestarted waits for a pending prestart and takes its init, if it
// made one.
func takePrestarted() *initProc {
	prestart.mu.Lock()
	done := prestart.done
	prestart.mu.Unlock()
	if done == nil {
		return nil
	}
	<-done
	prestart.mu.Lock()
	defer prestart.mu.Unlock()
	ip := prestart.ip
	prestart.ip, prestart.done = nil, nil
	return ip
}

// DropPrestart kills the init Prestart began, if no world took it (a
// command that opened another driver's world, or none).
func DropPrestart() {
	if ip := takePrestarted(); ip != nil {
		ip.kill(false)
	}
}

// takePrestart returns the init Prestart began if it was spawned for f
// and, with its cgroup, for a world with limits named stateID, or, in
// none, for a world without (limited); else nil (and kills it: nothing
// else would take it). A world without limits has no cgroup, so it does
// not take one that was joined to one; a world with limits does not
// take one spawned in none, which its cgroup could only get by a move
// slower than a spawn.
func takePrestart(f spawnFor, stateID string, limited bool) *initProc {
	ip := takePrestarted()
	if ip == nil {
		return nil
	}
	if pc := ip.pre; pc != nil && pc.cg == nil {
		ip.pre = nil // none could be made (no delegated cgroup): the init is in none
	}
	if !ip.spawnFor.same(f) || ip.unlimited && limited || ip.pre != nil && (ip.pre.id != stateID || !limited) {
		newHostTrace().say("prestarted init not for this world: killed")
		ip.kill(false)
		return nil
	}
	return ip
}

// defaultSpawn is what a Driver with default Options spawns a serving
// init for.
func defaultSpawn() (spawnFor, error) {
	f := spawnFor{serve: true, mapped: os.Geteuid() == 0, embedded: true, cgParent: cgroupParent, cgroupFD: -1}
	var err error
	if f.mapped {
		if f.ids, err = worldIDRange(0); err != nil {
			return f, err
		}
	}
	if f.exe, err = os.Executable(); err != nil {
		return f, err
	}
	if f.base, err = stateBase(""); err != nil {
		return f, err
	}
	if os.Getenv("DSH_NATIVE_TRACE") == "1" {
		f.stderr = os.Stderr // the init's step timings
	}
	return f, nil
}
