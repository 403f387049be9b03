package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/sandbox"
	"github.com/dsh-dev/dsh/sandbox/native"
)

// Statuses dsh run exits with when the command itself did not decide.
const (
	statusDshFailed     = 125 // dsh could not run the command
	statusNotExecutable = 126
	statusNotFound      = 127
)

func newRunCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "run [flags] [--] CMD [ARG...]",
		Short: "Run a command inside a confined execution world",
		Long: `Run starts an execution world on the workspace (default: the current
directory, mounted read-write at the same path inside), runs CMD there with
no implicit shell, streams its stdin, stdout and stderr, and exits with its
status: its exit code; 128+N when killed by signal N; 124 on timeout;
125 when dsh itself fails; 126 when CMD is not executable; 127 when it is
not found.

With --tty the command runs on a terminal made inside the world, of the
size of yours, and follows its resizing; your terminal is in raw mode
meanwhile, so keys such as ^C reach the command's own terminal. Everything it
prints arrives on stdout.

Processes inside reach the network only through the world's egress proxy,
under the sandbox policy (config key network; default: deny everything).
Use --policy and --allow to change it for one run. At exit dsh says on
stderr which destinations the proxy refused and how to allow them;
--audit FILE (or the config key proxy.audit) keeps the proxy's JSON audit
lines, one per connection, and --audit - writes them to stderr (stdout is
the command's). --json reports them in its egress array.

dsh's flags end at CMD: everything after it is the command's, so
"dsh run ls -la" and "dsh run --memory 1G echo --help" run ls -la and
echo --help. "--" may still separate the two.

The environment is the world's own; -e NAME=VALUE sets a variable, -e NAME
copies this shell's value of NAME (left out when unset, as docker does),
and --env-file FILE reads NAME=VALUE lines (# comments and blank lines
ignored; a bare NAME copies the host value). With --tty, TERM is yours
(xterm-256color when unset) unless -e sets it.

A command that the kernel killed for exceeding --memory is reported as
out of memory (stderr, and "oom_killed": true in --json).

--workspace-mode ro mounts the workspace read-only. --workspace-mode
overlay gives the command a copy-on-write view: the workspace stays
untouched, its writes (at most --overlay-size) go to a layer of their
own, and at the end dsh reports what was added, modified and deleted
(stderr, and "changes" in --json). --apply then copies the changes in
when the command exited 0 (never protected paths such as .git/hooks or
dsh.yaml, special files, or setuid/setgid bits); --keep DIR copies the
layer to DIR for review instead.`,
		Example: `  dsh run -- make test
  dsh run --allow proxy.golang.org -- go mod download
  dsh run --driver docker --image dsh/base:latest -- bash -c 'id; grep Cap /proc/self/status'
  dsh run -t -- bash
  dsh run ls -la
  dsh run -e GOFLAGS -w sub/dir -- go test ./...
  dsh run --audit - -- curl -sS https://example.com
  dsh run --write-limit 1GiB --memory 512MiB -- ./build.sh
  dsh run --workspace-mode overlay -- make generate
  dsh run --workspace-mode overlay --apply -- gofmt -w .
  dsh run --workspace-mode overlay --keep /tmp/review -- ./install.sh`,
		Args:        cobra.MinimumNArgs(1),
		RunE:        runRun,
		Annotations: map[string]string{failureStatusAnnotation: "125"},
	}
	addWorldFlags(cmd)
	f := cmd.Flags()
	// The first argument that is not a flag begins the command: its own
	// flags are never dsh's.
	f.SetInterspersed(false)
	f.Duration("timeout", 0, "end the command after this long (SIGTERM to its processes, 3s, SIGKILL) and exit 124; 0 means no timeout")
	f.StringArrayP("env", "e", nil, "environment entry NAME=VALUE for the command, or NAME to copy this shell's value (repeatable); nothing else of the host environment enters")
	f.StringArray("env-file", nil, "read environment entries from FILE: NAME=VALUE or NAME lines, # comments (repeatable; -e wins)")
	f.StringP("workdir", "w", "", "working directory of the command: a directory inside the workspace, relative to its root or absolute (default: the workspace root)")
	f.String("audit", "", "write the egress proxy's JSON audit lines (one per connection) to FILE (appended), or - for stderr")
	bindConfigFlag(cmd, "audit", "proxy.audit")
	f.Bool("json", false, "print one JSON object with the status and the output tails instead of streaming the output")
	addChangeFlags(cmd)
	f.BoolP("tty", "t", false, "run the command on a terminal of its own inside the world (shells, interactive programs); needs a terminal on dsh's stdin")
	return cmd
}

// runResult is the --json output.
type runResult struct {
	World           string `json:"world"`
	Driver          string `json:"driver"`
	Confined        bool   `json:"confined"`
	ExitCode        int    `json:"exit_code"`
	Signal          int    `json:"signal,omitempty"`
	OOMKilled       bool   `json:"oom_killed,omitempty"`
	TimedOut        bool   `json:"timed_out,omitempty"`
	Canceled        bool   `json:"canceled,omitempty"`
	DurationMs      int64  `json:"duration_ms"`
	Stdout          string `json:"stdout"`
	StdoutTotal     int64  `json:"stdout_total_bytes"`
	StdoutTruncated bool   `json:"stdout_truncated,omitempty"`
	Stderr          string `json:"stderr"`
	StderrTotal     int64  `json:"stderr_total_bytes"`
	StderrTruncated bool   `json:"stderr_truncated,omitempty"`
	// Egress is every destination the world's proxy judged, refused or
	// allowed, with its verdict, rule and count; [] when none.
	Egress []egressEntry `json:"egress"`
	// Changes is the change set of an overlay workspace (and what
	// --apply or --keep did with it); absent in the other modes.
	Changes *changeReport `json:"changes,omitempty"`
}

func runRun(cmd *cobra.Command, args []string) error {
	err := runRunCmd(cmd, args)
	var ee *exitError
	if errors.As(err, &ee) && ee.msg != "" {
		// dsh failed before the command could report: the --json envelope
		// also says the status dsh exits with.
		ee.extra = map[string]any{"exit_code": ee.code}
	}
	return err
}

func runRunCmd(cmd *cobra.Command, args []string) error {
	cliTrace.printAtExit()
	cliTrace.mark("parse")
	cfg, err := loadConfig(cmd)
	if err != nil {
		return exitf(statusDshFailed, "configuration: %v", err)
	}
	cliTrace.mark("configuration")
	plan, err := planWorld(cfg, worldFlags(cmd))
	if err != nil {
		return exitf(statusDshFailed, "%v", err)
	}
	cliTrace.mark("plan")
	plan.warnUnconfined(cmd.ErrOrStderr())
	changeOpts, err := changeFlags(cmd, plan.spec.Mode())
	if err != nil {
		return exitf(statusDshFailed, "%v", err)
	}
	c, tty, err := runCmdSpec(cmd, args)
	if err != nil {
		return exitf(statusDshFailed, "%v", err)
	}
	audit, closeAudit, err := openRunAudit(cfg.Proxy.Audit, cmd.ErrOrStderr())
	if err != nil {
		return exitf(statusDshFailed, "%v", err)
	}
	defer closeAudit()
	egress := newEgressCollector(audit)
	plan.audit = egress
	asJSON, _ := cmd.Flags().GetBool("json")
	if !asJSON {
		// Said whatever the end, once the world (and its proxy) is closed:
		// a refused connection is often why the command failed.
		defer egress.summarize(cmd.ErrOrStderr())
	}

	// From here on dsh handles SIGINT, SIGTERM and SIGHUP itself, so that
	// no signal can end it between creating the world and closing it
	// (which would leak a container). One during Open abandons the run.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	ctx := cmd.Context()
	openCtx, cancelOpen := context.WithCancel(ctx)
	opened := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			cancelOpen()
			select { // runInWorld sees it too, if Open won the race
			case sigs <- sig:
			default:
			}
		case <-opened:
		}
	}()
	cliTrace.mark("command, audit")
	w, err := openWorld(openCtx, plan, cmd.ErrOrStderr())
	close(opened)
	native.DropPrestart() // unless the world took it; before the command runs
	cliTrace.mark("open")
	if err != nil {
		interrupted := openCtx.Err() != nil && ctx.Err() == nil
		cancelOpen()
		if interrupted {
			return exitf(130, "interrupted while opening the world: %v", err)
		}
		return exitf(statusDshFailed, "%v", err)
	}
	defer w.Close()
	if openCtx.Err() != nil {
		cancelOpen()
		return exitf(130, "interrupted while opening the world")
	}
	cancelOpen()

	if tty != nil {
		if err := tty.raw(); err != nil {
			return exitf(statusDshFailed, "--tty: putting your terminal in raw mode: %v", err)
		}
		defer tty.restore()
	}
	res, err := runInWorld(ctx, w, c, sigs, tty)
	cliTrace.mark("run")
	if tty != nil {
		tty.restore() // before any message of dsh's own
	}

	if err != nil {
		var se *execworld.StartError
		if errors.As(err, &se) {
			return exitf(se.ShellCode(), "%v", err)
		}
		if res == nil {
			return exitf(statusDshFailed, "%v", err)
		}
		if res.Lost {
			// The status is unknown: never report it as the command's.
			return exitf(statusDshFailed, "%s did not finish, its status is unknown: %v", c.Argv[0], err)
		}
	}
	var report *changeReport
	if plan.spec.Mode() == sandbox.WorkspaceOverlay {
		if report, err = finishOverlay(w, changeOpts, res.ExitCode()); err != nil {
			if report != nil && !asJSON {
				report.print(cmd.ErrOrStderr(), w.Spec().Workspace)
			}
			return exitf(statusDshFailed, "overlay workspace: %v", err)
		}
		if !asJSON {
			report.print(cmd.ErrOrStderr(), w.Spec().Workspace)
		}
	}
	if asJSON {
		w.Close() // the proxy's last audit lines are in
		out := runResult{
			World: w.ID, Driver: w.Backend(), Confined: plan.driver.confines,
			ExitCode: res.ExitCode(), Signal: int(res.Status.Signal), OOMKilled: res.OOMKilled,
			TimedOut: res.TimedOut, Canceled: res.Canceled, DurationMs: res.Duration.Milliseconds(),
			Stdout: string(res.Stdout.Data), StdoutTotal: res.Stdout.Total, StdoutTruncated: res.Stdout.Truncated,
			Stderr: string(res.Stderr.Data), StderrTotal: res.Stderr.Total, StderrTruncated: res.Stderr.Truncated,
			Egress: egress.egress(), Changes: report,
		}
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return exitf(statusDshFailed, "writing the result: %v", err)
		}
	} else if res.TimedOut {
		fmt.Fprintf(cmd.ErrOrStderr(), "dsh: %s timed out after %v; its processes were killed\n", c.Argv[0], c.Timeout)
	} else if res.OOMKilled {
		fmt.Fprintf(cmd.ErrOrStderr(), "dsh: %s was killed by the kernel for running out of memory (the world's limit is %s); raise --memory\n", c.Argv[0], memoryLimit(cfg))
	}
	if code := res.ExitCode(); code != 0 {
		return exitCode(code)
	}
	return nil
}

// runInWorld runs c to the end. Run caps timeouts for tools; the CLI lets
// a command run as long as the user asked (or forever), so it uses Start.
// SIGINT, SIGTERM and SIGHUP to dsh are passed on to the command's process
// group, as a shell passes Ctrl-C to its foreground job; a second one ends
// the command (SIGTERM, grace, SIGKILL).
//
// With a terminal (--tty), its size changes are passed on as well.
func runInWorld(ctx context.Context, w *execworld.World, c *execworld.Cmd, sigs <-chan os.Signal, tty *hostTerminal) (*execworld.Result, error) {
	r, err := w.Exec.Start(ctx, c)
	if err != nil {
		return nil, err
	}
	// Start's ctx bounds the start only; here ctx is the command's life.
	defer context.AfterFunc(ctx, r.Stop)()
	if tty != nil {
		tty.follow(r)
	}
	go func() {
		forwarded := false
		for {
			select {
			case sig := <-sigs:
				if forwarded {
					r.Stop()
					continue
				}
				forwarded = true
				r.Signal(sig.(syscall.Signal))
			case <-r.Done():
				return
			}
		}
	}()
	return r.Wait()
}

// runCmdSpec builds the command from the arguments and flags, and with
// --tty returns dsh's terminal.
func runCmdSpec(cmd *cobra.Command, args []string) (*execworld.Cmd, *hostTerminal, error) {
	env, err := runEnv(cmd)
	if err != nil {
		return nil, nil, err
	}
	timeout, _ := cmd.Flags().GetDuration("timeout")
	if timeout < 0 {
		return nil, nil, fmt.Errorf("--timeout %v is negative; give a duration such as 30s, or 0 for none", timeout)
	}
	dir, _ := cmd.Flags().GetString("workdir")
	c := &execworld.Cmd{Argv: args, Env: env, Timeout: timeout, Dir: dir}
	asJSON, _ := cmd.Flags().GetBool("json")
	if !asJSON {
		c.Stdout, c.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
		// Only the tails of --json are ever read; keep little.
		c.MaxOutputBytes = 1
	}
	if withTTY, _ := cmd.Flags().GetBool("tty"); withTTY {
		if asJSON {
			return nil, nil, errors.New("--json collects the output and --tty streams it to your terminal; drop one of them")
		}
		tty, err := openHostTerminal(cmd.InOrStdin())
		if err != nil {
			return nil, nil, err
		}
		size := tty.size()
		c.TTY, c.Stdin = &size, tty.f
		c.Env = withTERM(c.Env, os.Getenv("TERM"))
		return c, tty, nil
	}
	if stdinWanted(cmd.InOrStdin()) {
		c.Stdin = cmd.InOrStdin()
	}
	return c, nil, nil
}

// stdinWanted reports whether dsh's stdin should feed the command: not
// when it is /dev/null or closed (the command then sees /dev/null).
func stdinWanted(in io.Reader) bool {
	f, ok := in.(*os.File)
	if !ok {
		return in != nil
	}
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	if fi.Mode()&os.ModeCharDevice != 0 {
		// /dev/null is a character device, and so is a terminal; only the
		// terminal carries input.
		null, err := os.Stat(os.DevNull)
		return err != nil || !os.SameFile(fi, null)
	}
	return true
}
