// Package pid1 is dsh's init: PID 1 of every sandbox, and the client that
// drives it from outside.
//
// The init ([Serve], or [Main] as `dsh __init`) serves one connection — any
// [io.ReadWriteCloser]: a container's attach stream for the docker driver,
// a re-executed child's stdin and stdout joined with [JoinConn] for the
// native driver. The connection carries a yamux session, so any number of
// processes run and stream at once, each with its own flow control:
// a process's unread stdout stalls that process alone, never the others.
//
// Per process the client opens up to four streams, each beginning with a
// 9-byte header (a kind byte and the process id the client chose):
//
//	'o' stdout   init -> client, the exact bytes the process wrote
//	'e' stderr   init -> client
//	'i' stdin    client -> init (only when ProcessSpec.Stdin is true)
//	'c' control  newline-delimited JSON both ways
//
// On the control stream the client sends one start request (argv, dir
// and env as byte strings, so non-UTF-8 bytes arrive exactly; the stdin
// flag; the terminal size when the process gets a terminal; the protocol
// version) and later any number of signal and resize requests; the init
// answers "started" (with the pid) or a typed start
// error, then "exit" once the process is reaped, an output total per
// stdout/stderr stream just before closing it (so the client can tell a
// complete stream from one cut short by a lost connection), and
// "stdinClosed" when nothing reads stdin any more. The init closes the
// control stream when the process has exited and every holder of its
// output pipes is gone; until then Signal reaches the process group, so
// background children that keep the pipes open can still be killed.
//
// With direct stdio ([NewDirectClient], [ServeOptions.Stdio]; the native
// driver), a process without a terminal has no data streams: the init
// passes its pipes' parent ends to the client over a unix socket pair
// (SCM_RIGHTS) and the client reads and writes the process's own pipes;
// the control stream is as above, with the client reporting each
// output's end ("outputEnd"). See direct.go.
//
// Semantics the drivers rely on:
//
//   - Every process starts as the leader of a session of its own, and so
//     of its own process group (its pid); Signal signals the whole group.
//     Without a terminal the session has no controlling terminal: /dev/tty
//     opens nothing (ENXIO), and no terminal of another session is its.
//   - A process with a terminal (ProcessSpec.TTY) gets a pseudo-terminal
//     opened by the init in the sandbox's own /dev/pts, as stdin, stdout,
//     stderr and the controlling terminal of its session. Its 'o' stream carries the terminal's
//     output, its 'e' stream ends empty, its 'i' stream is typed in, and a
//     resize request sets the size (the kernel sends SIGWINCH).
//   - argv[0] is resolved with the PATH of the process's own environment,
//     inside the sandbox; failures are [*StartError] values wrapping
//     [ErrNotFound] (shell code 127) or [ErrNotExecutable] (126).
//   - The init owns wait4 for its children: it does not use os/exec's Wait,
//     so reaping orphans can never steal a direct child's exit status.
//     As PID 1 (or as a child subreaper) it reaps every zombie.
//   - As PID 1 of its own pid namespace, [Main] ignores every signal a
//     process can send it (the kernel keeps SIGKILL and SIGSTOP of the
//     namespace's own processes from it); only SIGKILL from outside and
//     the end of the connection stop it. Its processes start with an
//     oom_score_adj 1000 above the init's (at most 1000; 0 when the
//     driver lowered the init to -1000), so the OOM killer picks them
//     first.
//   - When the connection closes or fails (and, for Main outside a pid
//     namespace of its own, on SIGTERM, SIGINT or SIGHUP), the init SIGKILLs every process group it started
//     and every descendant it can find (kill(-1) as PID 1; its children,
//     repeatedly, as a subreaper), reaps them, and returns: nothing it
//     started survives it. A client that closes a process's control stream
//     early (a cancelled Start) gets that process group killed.
//   - Signal reaches a process group only. A descendant that moves to a
//     session or group of its own escapes Signal (not the final kill);
//     killing a whole tree on timeout is the driver's cgroup's job.
//
// Before it serves, [Run] sets up what a driver's [Config] names, the same
// for every driver: the egress relay (the world's one proxy address on its
// loopback, each connection joined to a stream from the egress broker,
// sandbox.ServeEgress) and then the world filter (filter.go), which every
// process of the world inherits.
//
// The init is the untrusted side: it runs inside the sandbox. The client
// bounds every message it reads from it and never trusts its pids for
// anything but reporting.
package pid1
