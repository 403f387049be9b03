package native

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/dsh-dev/dsh/sandbox"
	"github.com/dsh-dev/dsh/sandbox/native/nsinit"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// launch is one started init: everything the parent must undo.
type launch struct {
	// ip is the init and dsh's ends of what it inherited; cmd is its
	// process until someone waited for it (then nil).
	ip  *initProc
	cmd *exec.Cmd
	// waited says its user waited for the init (instance.stop): cleanup
	// neither kills nor waits for it again.
	waited bool
	id     string // the world's name: its cgroup's, with the owner for reaping
	cg     worldCgroup
	// placing is the result of placing the init in its cgroup v1 while
	// it sets up (serve mode), nil when that is done or not needed: the
	// write names the init by its pid, so the init is not killed and
	// reaped before it is done (cleanup).
	placing <-chan error
	// limiting is the result of limiting the cgroup once the spawn is
	// done (limitOnceSpawned), nil when that was taken.
	limiting chan error
	// upper is the overlay workspace's upper tmpfs (a detached mount
	// the init made), nil in the other modes.
	upper *os.File
	// ctlR/ctlW carry the pid1 session and stdio is dsh's end of the
	// stdio socket (serve mode only).
	ctlR, ctlW *os.File
	stdio      *net.UnixConn
	// undo removes what the steps of start made; the launch owns it once
	// start succeeds (cleanup).
	undo undo
}

// undo is a cleanup stack: each step that makes something pushes how to
// remove it, and run removes everything in reverse order.
type undo []func()

func (u *undo) push(f func()) { *u = append(*u, f) }

func (u *undo) run() {
	for i := len(*u) - 1; i >= 0; i-- {
		(*u)[i]()
	}
	*u = nil
}

// cleanup kills the init (unless it was waited for: waited), then
// removes what the steps made: the world's cgroup and placeholders, which
// nothing uses once the init and its world are gone.
// Safe on a partly built launch, and after parts were released by hand
// (a nil cg is skipped).
func (l *launch) cleanup() {
	_ = l.awaitPlaced() // before the init's pid can be reaped and reused
	if l.limiting != nil {
		<-l.limiting // before the cgroup is removed
		l.limiting = nil
	}
	if l.ip != nil {
		l.ip.kill(l.waited)
		l.ip, l.cmd = nil, nil
	}
	l.undo.run()
}

// stdio is where the init's own standard streams go in exec mode.
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

// plan is what start decides before it makes anything.
type plan struct {
	ws         string
	worldID    string
	egress     sandbox.EgressServer
	res        *specs.LinuxResources
	wantLimits bool
	mapped     bool // a root caller: the world gets the host range ids
	ids        idRange
	exe        string
	base       string // the state directory of every world
	cgParent   string
	cfg        *nsinit.Config    // Root and the egress fields are filled in by the steps
	serve      bool              // serve pid1, else exec cfg.Exec
	protected  []string          // Spec.Protected, prepared by the protect step
	filter     chan filterResult // the seccomp program, being assembled
}

// plan checks spec and decides everything of the world that needs
// nothing made yet. It reaps worlds whose dsh crashed.
func (d *Driver) plan(spec *sandbox.Spec, opts *sandbox.OpenOptions, execArgv, execEnv []string) (*plan, error) {
	ws, err := checkSpec(spec)
	if err != nil {
		return nil, err
	}
	p := &plan{ws: ws, serve: execArgv == nil, protected: spec.Protected}
	if p.worldID, p.egress, err = opts.Resolve(spec); err != nil {
		return nil, invalid(err)
	}
	if p.res, p.wantLimits, err = limits(spec.Resources); err != nil {
		return nil, err
	}
	// A root caller's world is mapped to an unprivileged host range.
	p.mapped = os.Geteuid() == 0
	if p.mapped {
		if p.ids, err = worldIDRange(d.opts.IDBase); err != nil {
			return nil, err
		}
	}
	uid, gid, groups, err := identity(spec, p.mapped, ws)
	if err != nil {
		return nil, err
	}
	if p.exe = d.opts.Executable; p.exe == "" {
		if p.exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("native: finding dsh's own binary to run as the init: %w", err)
		}
	}
	if p.base, err = stateBase(d.opts.StateDir); err != nil {
		return nil, err
	}
	if err := checkApart(p.base, ws, spec.Mounts); err != nil {
		return nil, err
	}
	if p.cgParent, err = d.cgroupParent(); err != nil {
		return nil, err
	}
	// dsh's state directory (every world's root mount point, in its
	// init's namespace) is never in a world.
	masks := expandMasks(append(append([]string(nil), spec.Masks...), p.base), p.mapped)
	homes, allow := homeLayout(spec.HomeAllow, ws, masks)
	// The write budget: tmpfs sizes and RLIMIT_FSIZE (package sandbox).
	bounds := sandbox.Bounds(spec, 0)
	// Binds are given by the real paths their checks saw (UserBind), and
	// the init binds exactly those, through no link (nsinit.CloneExact):
	// resolving one again here would follow a link a world swapped in
	// since, past those checks.
	for i, m := range bounds.Mounts {
		if !sandbox.IsBind(m) {
			continue
		}
		real, err := filepath.EvalSymlinks(m.Source)
		if err != nil {
			return nil, invalid(&sandbox.SpecError{Field: fmt.Sprintf("Mounts[%d]", i), Msg: fmt.Sprintf("the bind source %s: %v", m.Source, err), Fix: "create it or fix the path"})
		}
		if real != m.Source {
			return nil, invalid(&sandbox.SpecError{Field: fmt.Sprintf("Mounts[%d]", i), Msg: fmt.Sprintf("the bind source %s is not its real path (%s): a link in it could have been swapped since it was checked", m.Source, real), Fix: "give the source by its real path (sandbox.UserBind does)"})
		}
	}
	p.cfg = &nsinit.Config{
		Workspace: ws, Hostname: spec.Hostname,
		Masks: append(masks, homes...),
		Allow: allow, Trees: p.mapped,
		Mounts: bounds.Mounts, Rlimits: bounds.Rlimits, Shm: bounds.Shm,
		UID: uid, GID: gid, Groups: groups,
		Exec: execArgv, ExecEnv: execEnv,
		Trace:         os.Getenv("DSH_NATIVE_TRACE") == "1",
		UnixSockets:   spec.UnixSockets,
		WorkspaceMode: string(spec.Mode()),
		OverlaySize:   spec.UpperSize(),
	}
	applyRoot(p.cfg, spec)
	// Only a root of the world's user namespace (a root caller's mapped
	// range) may set its IPC sysctls; an unprivileged world gets no
	// System V shared memory rather than an unbounded one (its seccomp
	// program refuses shmget).
	noSysVShm := !p.mapped
	if p.mapped {
		p.cfg.IPC = bounds.IPC
	}
	// The seccomp program is assembled beside the start's steps; the
	// release takes it.
	p.filter = make(chan filterResult, 1)
	go func() {
		prog, err := filterProgram(noSysVShm)
		p.filter <- filterResult{prog, err}
	}()
	return p, nil
}

type filterResult struct {
	prog []unix.SockFilter
	err  error
}

// afterPlan runs between the checks of plan and the steps that use what
// they checked: the tests swap a checked path for a link there, as a
// world writing a directory above it could. beforeSpawn runs as a
// world's own init (not Prestart's) is spawned, in its cgroup if any: the
// tests read the cgroup's limits there.
var (
	afterPlan   = func() {}
	beforeSpawn = func(worldCgroup) {}
)

// starting is one start in progress: the launch being built and what
// only the start needs (its descriptors, closed by transient whether it
// succeeds or not).
type starting struct {
	*plan
	d         *Driver
	ctx       context.Context
	io3       *stdio
	l         *launch
	transient undo

	// ip is the init being spawned (initproc.go).
	ip    *initProc
	trees []int
	// adopted says the world's cgroup is the one Prestart made and
	// placed the init in (adoptCgroup).
	adopted bool
}

// start launches an init for spec. With exec set, the init executes that
// argv as the sandbox's PID 1 instead of serving pid1 (probe and tests of
// the setup stage). opts gives the world's ID and egress server; nil
// means a fresh ID and no server. It runs the steps below in order; each
// pushes the undo of what it made, and on error everything made so far
// is removed in reverse order.
func (d *Driver) start(ctx context.Context, spec *sandbox.Spec, opts *sandbox.OpenOptions, execArgv, execEnv []string, io3 *stdio) (*launch, error) {
	tr := newHostTrace()
	p, err := d.plan(spec, opts, execArgv, execEnv)
	if err != nil {
		return nil, err
	}
	afterPlan()
	s := &starting{plan: p, d: d, ctx: ctx, io3: io3, l: &launch{}}
	defer s.transient.run()
	tr.mark("plan")
	for _, step := range []struct {
		name string
		run  func() error
	}{
		{"name", s.name},                   // the world's name and root mount point
		{"spawn", s.spawn},                 // Prestart's init is taken, or (a world with limits) its cgroup made and the init begun in it
		{"protect", s.protect},             // placeholders and binds of the protected paths
		{"connectEgress", s.connectEgress}, // the broker connection dsh serves
		{"spawned", s.awaitSpawn},          // the init runs, in its namespaces and cgroup
		{"placeInCgroup", s.placeInCgroup}, // an init not born in its cgroup v1: placed by its pid
		{"makeTrees", s.makeTrees},         // a root caller: the idmapped workspace and homes
		{"limit", s.limit},                 // the cgroup's limits, set once the spawn was done
		{"release", s.release},             // the init may go on
		{"awaitReady", s.awaitReady},       // its verdict
		{"placed", s.awaitPlaced},          // cgroup v1: the init is in its cgroup
		{"receiveUpper", s.receiveUpper},   // an overlay workspace's upper layer
		{"limitPids", s.limitPids},         // v2, exec mode: the pids limit, now the init's threads exist
	} {
		if err := step.run(); err != nil {
			s.l.cleanup()
			return nil, err
		}
		tr.mark(step.name)
	}
	return s.l, nil
}

// name names the world (stateName). Its root's mount point is the state
// directory itself, in the init's own mount namespace, where every
// world's root is mounted over it without touching the host's: nothing
// is made on the host for it, so nothing is left to remove.
func (s *starting) name() error {
	id, err := stateName(s.worldID)
	if err != nil {
		return err
	}
	s.l.id = id
	s.cfg.Root = s.base
	return nil
}

// connectEgress serves the world's egress on the broker connection the
// init inherited, or closes it: a world without egress has no way out.
func (s *starting) connectEgress() error {
	if s.egress == nil {
		s.ip.broker.Close()
		return nil
	}
	go sandbox.ServeEgress(s.ip.broker, s.egress)
	s.cfg.Egress = true
	s.cfg.ProxyPort = proxyPort
	return nil
}

// makeCgroup creates the world's cgroup, if it has limits, before the
// spawn: the init is born in it (cgroup v2: clone3 CLONE_INTO_CGROUP; v1:
// forked by the spawner thread from inside it, spawner.go). Its limits
// are set once the spawn is done (limit): the fork and the child until
// its execve are not held to them, nor charged against them, and one
// world's cpu quota never slows the spawner every world shares. Nothing
// of the world runs before the release, which comes after.
func (s *starting) makeCgroup() error {
	if !s.wantLimits {
		return nil
	}
	cg, err := newCgroupFor(s.cgParent, s.l.id, s.res)
	if err != nil {
		return err
	}
	s.l.cg = cg
	// Through the field: a closing instance destroys it first.
	s.l.undo.push(func() {
		if s.l.cg != nil {
			_ = s.l.cg.destroy()
		}
	})
	return nil
}

// limitOnceSpawned gives the world's cgroup (a prestarted init's too,
// adopted) the limits its Spec names as soon as the init's spawn is
// done, beside the steps that follow; limit waits for that.
func (s *starting) limitOnceSpawned() {
	cg, ip := s.l.cg, s.ip
	if cg == nil {
		return
	}
	limiting := make(chan error, 1)
	s.l.limiting = limiting
	go func() {
		if ip.wait() != nil {
			limiting <- nil // awaitSpawn reports it
			return
		}
		limiting <- cg.limit(s.res)
	}()
}

// limit waits for limitOnceSpawned: the world's limits are set before
// its release.
func (s *starting) limit() error {
	if s.l.limiting == nil {
		return nil
	}
	err := <-s.l.limiting
	s.l.limiting = nil
	if err != nil {
		return &unavailableError{Step: "limit the sandbox's cgroup " + s.cgParent + "/" + s.l.id, Err: err, Fix: cgroupFix}
	}
	return nil
}

// adoptCgroup makes the cgroup Prestart made for its init (preCgroup),
// named for this world, the world's (limited by the limit step). The
// init was born in it, or its placement may still be under way:
// awaitPlaced waits for it, as for a group made here.
func (s *starting) adoptCgroup() {
	pc := s.ip.pre
	s.ip.pre = nil // the launch's now
	s.l.cg = pc.cg
	s.l.undo.push(func() {
		if s.l.cg != nil { // through the field: a closing instance destroys it first
			_ = s.l.cg.destroy()
		}
	})
	s.adopted = true
	s.l.placing = pc.placed
}

// spawnFor is what this world's init is spawned for.
func (s *starting) spawnFor() spawnFor {
	f := spawnFor{serve: s.serve, mapped: s.mapped, ids: s.ids, exe: s.exe, base: s.base,
		embedded: s.d.opts.Executable == "", cgParent: s.cgParent, stderr: s.d.opts.Stderr, cgroupFD: -1}
	if s.io3 != nil && !s.serve {
		f.io3 = s.io3
	}
	if f.serve && f.stderr == nil && s.cfg.Trace {
		f.stderr = os.Stderr // the init's step timings
	}
	return f
}

// spawn takes the init Prestart began for the same world, with its
// cgroup; or makes the world's cgroup and begins the init's spawn in it,
// which runs while the next steps make the world's state (awaitSpawn
// joins it).
func (s *starting) spawn() error {
	f := s.spawnFor()
	if s.ip = takePrestart(f, s.l.id, s.wantLimits); s.ip != nil {
		s.l.ip = s.ip
		if s.ip.pre != nil {
			s.adoptCgroup()
		} else if err := s.makeCgroup(); err != nil { // spawned in none: placed in the world's by its pid
			return err
		}
		s.limitOnceSpawned()
		return nil
	}
	if err := s.makeCgroup(); err != nil {
		return err
	}
	var groups []string
	if s.l.cg != nil {
		f.cgroupFD = s.l.cg.dirFD()
		groups = v1Groups(s.l.cg)
	}
	ip, err := newInitProc(f)
	if err != nil {
		return err
	}
	ip.cgDirs = groups
	s.ip, s.l.ip = ip, ip
	beforeSpawn(s.l.cg)
	ip.begin()
	s.limitOnceSpawned()
	return nil
}

// awaitSpawn waits for the init to run and hands the launch its
// process and ends.
func (s *starting) awaitSpawn() error {
	if err := s.ip.wait(); err != nil {
		if s.mapped {
			if rerr := s.ids.usable(); rerr != nil {
				return rerr
			}
		}
		return usernsError(err)
	}
	s.l.cmd, s.l.ctlR, s.l.ctlW, s.l.stdio = s.ip.cmd, s.ip.ctlR, s.ip.ctlW, s.ip.stdio
	if s.serve {
		s.cfg.Stdio = true
	}
	return nil
}

// placeInCgroup places the init in its cgroup v1 by its pid where it
// could not be born in it (spawnIn: the spawner thread may not move).
// That write waits for an RCU grace period of the kernel's
// cgroup_threadgroup_rwsem, 5-15 ms on a small VM, longer than the init's
// whole setup. In exec mode the init executes the command when set up,
// so it is placed before it is released. A serving init runs nothing of
// the world until dsh asks it to, which is after start returns: it is
// placed while it sets up, and awaitPlaced waits for that before the
// pids limit is fitted to its threads.
func (s *starting) placeInCgroup() error {
	if s.adopted { // Prestart's: in its cgroup, or placed while dsh loaded its configuration
		return nil
	}
	if s.serve {
		protectInit(s.l.cmd.Process.Pid)
	}
	if s.l.cg == nil || s.ip.cgroupFD >= 0 || s.ip.bornIn {
		return nil
	}
	// Taken now: a failed start's cleanup kills the init (and clears
	// the launch's fields) while the placement may still run.
	cg, pid := s.l.cg, s.l.cmd.Process.Pid
	if !s.serve {
		return addToCgroup(cg, pid)
	}
	placing := make(chan error, 1)
	go func() { placing <- addToCgroup(cg, pid) }()
	s.l.placing = placing
	return nil
}

func addToCgroup(cg worldCgroup, pid int) error {
	if err := cg.add(pid); err != nil {
		return &unavailableError{Step: "place the sandbox in its cgroup", Err: err, Fix: cgroupFix}
	}
	return nil
}

// awaitPlaced waits for placeInCgroup's write, if one is under way.
func (s *starting) awaitPlaced() error { return s.l.awaitPlaced() }

func (l *launch) awaitPlaced() error {
	if l.placing == nil {
		return nil
	}
	err := <-l.placing
	l.placing = nil
	return err
}

func (s *starting) makeTrees() error {
	if !s.mapped {
		return nil
	}
	trees, err := detachedTrees(s.l.cmd.Process.Pid, s.ws, s.cfg.Allow)
	if err != nil {
		return err
	}
	binds, err := bindTrees(s.l.cmd.Process.Pid, s.cfg.Mounts)
	if err != nil {
		closeFDs(trees)
		return err
	}
	trees = append(trees, binds...)
	s.trees = trees
	s.transient.push(func() { closeFDs(trees) })
	return nil
}

func (s *starting) release() error {
	// The init waits for its configuration. Nothing of the world runs
	// before it is limited: in exec mode the init was placed in its
	// cgroup first, a serving init runs nothing until dsh asks (after
	// awaitPlaced).
	f := <-s.filter
	if f.err != nil {
		return f.err
	}
	s.cfg.Seccomp = nsinit.EncodeFilter(f.prog)
	if s.cfg.Trace {
		s.cfg.TraceSpawn = s.ip.began.UnixNano()
	}
	fds := s.trees
	if s.serve && s.l.cg != nil {
		if g := s.l.cg.takeForkGroup(); g != nil {
			defer g.Close() // the init's now
			s.cfg.ForkGroup = true
			fds = append(fds[:len(fds):len(fds)], int(g.Fd()))
		}
	}
	if err := s.ip.release(s.cfg, fds); err != nil {
		return fmt.Errorf("native: releasing the init: %w", err)
	}
	return nil
}

func (s *starting) awaitReady() error { return waitReady(s.ctx, s.ip.readyR, s.serve) }

// receiveUpper takes the overlay's upper tmpfs the init sent before it
// reported readiness (nsinit.UpperMsg), and closes the sync channel.
func (s *starting) receiveUpper() error {
	defer s.ip.syncW.Close()
	if s.cfg.WorkspaceMode != string(sandbox.WorkspaceOverlay) {
		return nil
	}
	f, err := recvUpper(s.ip.syncW)
	if err != nil {
		return err
	}
	s.l.upper = f
	s.l.undo.push(func() { f.Close() })
	return nil
}

// limitPids holds the world's processes to exactly the pids limit the
// Spec names where they share a group with the init (cgroup v2, or exec
// mode); on v1 a serving init forks them into a group of their own, which
// has that limit already (cgroupV1.limit).
func (s *starting) limitPids() error {
	if s.l.cg == nil || s.res == nil || s.res.Pids == nil || s.cfg.ForkGroup {
		return nil
	}
	want := *s.res.Pids.Limit - pidsReserve
	var err error
	if s.serve {
		err = fitPids(s.l.cg, s.l.cmd.Process.Pid, want)
	} else {
		// Exec mode: PID 1 is the command itself, no init threads.
		err = s.l.cg.setPids(want)
	}
	if err != nil {
		return fmt.Errorf("native: setting the pids limit: %w", err)
	}
	return nil
}

// waitReady reads the init's verdict: 0x00 once stage 2 serves; in exec
// mode 0x01 before execve, then EOF when the execve succeeded (the pipe
// is close-on-exec) or the error message. Anything else — including EOF
// before any byte, an init that died during setup — is a failure.
func waitReady(ctx context.Context, r *os.File, serve bool) error {
	type result struct {
		first byte
		msg   []byte
		err   error
	}
	ch := make(chan result, 1)
	go func() {
		one := make([]byte, 1)
		if n, err := r.Read(one); n == 0 {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			ch <- result{first: 0xff, err: err}
			return
		}
		if one[0] == 0 {
			ch <- result{first: 0}
			return
		}
		var buf bytes.Buffer
		if one[0] != 1 {
			buf.WriteByte(one[0])
		}
		_, err := io.Copy(&buf, io.LimitReader(r, 64<<10))
		ch <- result{first: one[0], msg: buf.Bytes(), err: err}
	}()
	select {
	case <-ctx.Done():
		return fmt.Errorf("native: waiting for the sandbox to start: %w", ctx.Err())
	case res := <-ch:
		switch {
		case res.err != nil:
			return fmt.Errorf("native: reading the init's status: %w", res.err)
		case res.first == 0 && serve:
			return nil
		case res.first == 1 && !serve && len(res.msg) == 0:
			return nil
		case len(res.msg) == 0:
			return errors.New("native: the sandbox init exited during setup without a message (is the executable dsh, dispatching " + nsinit.Arg + "?)")
		}
		return initError(res.msg)
	}
}

// initError makes the init's Failure the driver's error.
func initError(msg []byte) error {
	f := nsinit.DecodeFailure(msg)
	if !f.Unavailable {
		return fmt.Errorf("native: setting up the sandbox: %s", f.Err)
	}
	var inner error
	if f.Err != "" {
		inner = errors.New(f.Err)
	}
	return &unavailableError{Step: f.Step, Err: inner, Fix: f.Fix}
}

// usernsError explains why the kernel refused the namespaces.
func usernsError(err error) error {
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EINVAL) {
		ok, why := userNSAllowed()
		if !ok {
			return &unavailableError{Step: "create a user namespace", Err: err, Fix: why}
		}
		return &unavailableError{Step: "create the sandbox namespaces", Err: err,
			Fix: "unprivileged user namespaces may be restricted (AppArmor, seccomp of an outer container, or a sysctl); run dsh as root or use --driver docker"}
	}
	return fmt.Errorf("native: starting the sandbox init: %w", err)
}

// fileUnixConn takes over f, a unix socket, as a connection (f is closed).
func fileUnixConn(f *os.File) (*net.UnixConn, error) {
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		return nil, err
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, fmt.Errorf("%s is not a unix socket", f.Name())
	}
	return uc, nil
}
