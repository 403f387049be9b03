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
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/dsh-dev/dsh/sandbox"
)

// cloneFlags are the namespaces of every world.
const cloneFlags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID |
	syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | syscall.CLONE_NEWCGROUP

// setupCaps are raised as ambient capabilities for stage 1 only: an
// unprivileged caller's mapped uid is not 0 inside, so execve would
// otherwise strip the capabilities the user namespace grants. Stage 1
// clears them before anything of the sandbox runs.
var setupCaps = []uintptr{
	unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETUID, unix.CAP_SETGID,
	unix.CAP_SETPCAP, unix.CAP_DAC_OVERRIDE, unix.CAP_SYS_RESOURCE,
}

// launch is one started init: everything the parent must undo.
type launch struct {
	cmd    *exec.Cmd
	id     string
	dir    string // state directory of the world
	cg     worldCgroup
	broker *net.UnixConn // dsh's end of the egress broker connection
	// ctlR/ctlW carry the pid1 session (serve mode only).
	ctlR, ctlW *os.File
}

// stdio is where the init's own standard streams go in exec mode.
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

// start launches an init for spec. With exec set, the init executes that
// argv as the sandbox's PID 1 instead of serving pid1 (probe and tests of
// the setup stage). opts gives the world's ID and egress server; nil
// means a fresh ID and no server. On error everything created is removed.
func (d *Driver) start(ctx context.Context, spec *sandbox.Spec, opts *sandbox.OpenOptions, execArgv, execEnv []string, io3 *stdio) (_ *launch, err error) {
	ws, err := checkSpec(spec)
	if err != nil {
		return nil, err
	}
	worldID, egress, err := opts.Resolve(spec)
	if err != nil {
		return nil, invalid(err)
	}
	res, wantLimits, err := limits(spec.Resources)
	if err != nil {
		return nil, err
	}
	// A root caller's world is mapped to an unprivileged host range.
	mapped := os.Geteuid() == 0
	var ids idRange
	if mapped {
		if ids, err = worldIDRange(d.opts.IDBase); err != nil {
			return nil, err
		}
	}
	uid, gid, groups, err := identity(spec, mapped, ws)
	if err != nil {
		return nil, err
	}
	exe := d.opts.Executable
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("native: finding dsh's own binary to run as the init: %w", err)
		}
	}
	base, err := stateBase(d.opts.StateDir)
	if err != nil {
		return nil, err
	}
	parent, err := d.cgroupParent()
	if err != nil {
		return nil, err
	}
	reap(base, parent)

	l := &launch{}
	defer func() {
		if err != nil {
			l.cleanup()
		}
	}()
	if l.id, err = stateName(worldID); err != nil {
		return nil, err
	}
	l.dir = filepath.Join(base, l.id)
	if err := os.Mkdir(l.dir, 0o700); err != nil {
		return nil, fmt.Errorf("native: creating world directory: %w", err)
	}
	root := filepath.Join(l.dir, "root")
	if err := os.Mkdir(root, 0o700); err != nil {
		return nil, fmt.Errorf("native: creating root mount point: %w", err)
	}
	// dsh's own state (every world's directory) is never in a world.
	masks := expandMasks(append(append([]string(nil), spec.Masks...), base), mapped)
	homes, allow := homeLayout(spec.HomeAllow, ws, masks)
	cfg := &initConfig{
		Root: root, Workspace: ws, Hostname: spec.Hostname,
		Masks: append(masks, homes...),
		Allow: allow, Trees: mapped,
		Mounts: spec.Mounts, Rlimits: spec.Rlimits,
		UID: uid, GID: gid, Groups: groups,
		Exec: execArgv, ExecEnv: execEnv,
		Trace:       os.Getenv("DSH_NATIVE_TRACE") == "1",
		UnixSockets: spec.UnixSockets,
	}
	var brokerChild *os.File // the init's end of the broker connection
	if egress != nil {
		if l.broker, brokerChild, err = brokerPair(); err != nil {
			return nil, err
		}
		defer brokerChild.Close()
		go sandbox.ServeEgress(l.broker, egress)
		cfg.Egress = true
		cfg.ProxyPort = proxyPort
	}
	if wantLimits {
		if l.cg, err = newCgroup(parent, l.id, res); err != nil {
			return nil, err
		}
	}
	env, err := cfg.encode()
	if err != nil {
		return nil, err
	}

	// The sync channel is a socket: the release byte may carry mounts.
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("native: sync socket: %w", err)
	}
	syncR, syncW := os.NewFile(uintptr(pair[1]), "sync"), os.NewFile(uintptr(pair[0]), "sync")
	defer syncR.Close()
	defer syncW.Close()
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer readyR.Close()
	defer readyW.Close()

	// Executed through a descriptor: the mapped init may not be allowed
	// to look up the binary's path (a test binary in a private directory).
	exeFile, err := os.Open(exe)
	if err != nil {
		return nil, fmt.Errorf("native: opening dsh's own binary to run as the init: %w", err)
	}
	defer exeFile.Close()
	cmd := exec.Command(exe, InitArg)
	cmd.Path = "/proc/self/fd/" + strconv.Itoa(fdExe)
	cmd.Args[0] = "dsh-init"
	// One P: the init only relays I/O, and every thread it has costs a
	// round in the all-threads credential drop.
	cmd.Env = []string{configEnv + "=" + env, "GOMAXPROCS=1"}
	cmd.ExtraFiles = []*os.File{syncR, readyW, exeFile}
	if brokerChild != nil {
		cmd.ExtraFiles = append(cmd.ExtraFiles, brokerChild) // fdBroker
	}
	var childCtl [2]*os.File
	if execArgv == nil {
		var inR, outW *os.File
		if inR, l.ctlW, err = os.Pipe(); err != nil {
			return nil, err
		}
		if l.ctlR, outW, err = os.Pipe(); err != nil {
			inR.Close()
			return nil, err
		}
		childCtl = [2]*os.File{inR, outW}
		cmd.Stdin, cmd.Stdout = inR, outW
		cmd.Stderr = d.opts.Stderr
	} else if io3 != nil {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = io3.in, io3.out, io3.err
	}
	sys := &syscall.SysProcAttr{
		Cloneflags:  cloneFlags,
		AmbientCaps: setupCaps,
		// A session of its own, with no controlling terminal: nothing in
		// the world shares the user's terminal (its /dev/tty, TIOCSTI,
		// settings) or its process group (^C reaches dsh alone, which
		// forwards it to the command).
		Setsid: true,
	}
	if mapped {
		sys.UidMappings, sys.GidMappings = ids.mappings()
		sys.GidMappingsEnableSetgroups = true
		// Writing the maps does not change the child's own ids: it would
		// keep host uid 0. Become the world's root, host id ids.uid.
		sys.Credential = &syscall.Credential{Uid: 0, Gid: 0}
	} else {
		sys.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
		sys.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
	}
	if l.cg != nil && l.cg.dirFD() >= 0 {
		// cgroup v2: born in its cgroup (clone3 CLONE_INTO_CGROUP), so
		// its cgroup namespace is rooted at the world's own group.
		sys.UseCgroupFD, sys.CgroupFD = true, l.cg.dirFD()
	}
	cmd.SysProcAttr = sys
	l.cmd = cmd
	err = startPinned(cmd)
	for _, f := range childCtl {
		if f != nil {
			f.Close()
		}
	}
	if err != nil {
		l.cmd = nil
		if mapped {
			if rerr := ids.usable(); rerr != nil {
				return nil, rerr
			}
		}
		return nil, usernsError(err)
	}
	syncR.Close()
	readyW.Close()
	exeFile.Close()
	if l.cg != nil && !sys.UseCgroupFD {
		if err := l.cg.add(cmd.Process.Pid); err != nil {
			return nil, &unavailableError{Step: "place the sandbox in its cgroup", Err: err, Fix: cgroupFix}
		}
	}
	if execArgv == nil {
		protectInit(cmd.Process.Pid)
	}
	var trees []int
	if mapped {
		if err := mapStateDir(base, l.dir, ids); err != nil {
			return nil, err
		}
		if trees, err = detachedTrees(cmd.Process.Pid, ws, allow); err != nil {
			return nil, err
		}
		defer closeFDs(trees)
	}
	// The init waits for this byte: nothing runs before it is limited.
	if err := release(syncW, trees); err != nil {
		return nil, fmt.Errorf("native: releasing the init: %w", err)
	}
	syncW.Close()
	if err := waitReady(ctx, readyR, execArgv == nil); err != nil {
		return nil, err
	}
	if l.cg != nil && res.Pids != nil {
		want := *res.Pids.Limit - pidsReserve
		if execArgv != nil {
			// Exec mode: PID 1 is the command itself, no init threads.
			err = l.cg.setPids(want)
		} else {
			err = fitPids(l.cg, cmd.Process.Pid, want)
		}
		if err != nil {
			return nil, fmt.Errorf("native: setting the pids limit: %w", err)
		}
	}
	return l, nil
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
			return errors.New("native: the sandbox init exited during setup without a message (is the executable dsh, dispatching " + InitArg + "?)")
		}
		return initError(string(res.msg))
	}
}

// initError rebuilds a typed error from stage 1's message.
func initError(msg string) error {
	if rest, ok := strings.CutPrefix(msg, "unavailable\x00"); ok {
		f := strings.SplitN(rest, "\x00", 3)
		for len(f) < 3 {
			f = append(f, "")
		}
		var inner error
		if f[1] != "" {
			inner = errors.New(f[1])
		}
		return &unavailableError{Step: f[0], Err: inner, Fix: f[2]}
	}
	return fmt.Errorf("native: setting up the sandbox: %s", msg)
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

// brokerPair makes the egress broker connection: dsh keeps one end, the
// init inherits the other. No socket file exists, so nothing on the host
// leads to this world's proxy.
func brokerPair() (*net.UnixConn, *os.File, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("native: egress broker: %w", err)
	}
	ours := os.NewFile(uintptr(fds[0]), "egress-broker")
	defer ours.Close()
	c, err := net.FileConn(ours)
	if err != nil {
		syscall.Close(fds[1])
		return nil, nil, fmt.Errorf("native: egress broker: %w", err)
	}
	return c.(*net.UnixConn), os.NewFile(uintptr(fds[1]), "egress-broker-init"), nil
}

// cleanup kills the init and removes the world's cgroup, socket and
// state directory. Safe on a partly built launch.
func (l *launch) cleanup() {
	if l.ctlW != nil {
		l.ctlW.Close()
	}
	if l.cmd != nil && l.cmd.Process != nil {
		_ = l.cmd.Process.Kill()
		_ = l.cmd.Wait()
	}
	if l.ctlR != nil {
		l.ctlR.Close()
	}
	if l.cg != nil {
		_ = l.cg.destroy()
	}
	if l.broker != nil {
		l.broker.Close()
	}
	if l.dir != "" {
		_ = os.RemoveAll(l.dir)
	}
}
