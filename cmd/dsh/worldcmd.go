package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/dsh-dev/dsh/internal/lazyre"
	"github.com/dsh-dev/dsh/workspace"
	"github.com/dsh-dev/dsh/workspace/client"
)

// The server dsh world talks to, and its token, when no flag names them.
const (
	worldServerEnv     = "DSH_SERVER"
	worldTokenEnv      = "DSH_SERVER_TOKEN"
	worldDefaultServer = "http://127.0.0.1:8765"
)

// worldProgressAfter is how long an operation runs before dsh world
// reports progress on stderr.
var worldProgressAfter = time.Second

func newWorldCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "world",
		Short: "Create and use hosted workspaces of a dsh server (dsh serve --http)",
		Long: `dsh world is a client of the workspaces REST API of dsh serve --http
(docs/WORKSPACES.md): named, persistent worlds with their own files, limits,
egress allowlist, TTL, pause and resume, confined like every dsh world.

The server is --server URL, else $` + worldServerEnv + `, else ` + worldDefaultServer + `.
The bearer token is read from --token-file FILE, else $` + worldTokenEnv + `
(the server's token, or the token a create printed for one workspace);
without one no Authorization header is sent.

Exit statuses: 0 success; 1 the server refused or failed the request, or
did not answer; 2 usage. dsh world exec exits with the command's status
(128+N when killed by signal N; 125 when dsh failed). With --json, every
answer is JSON on stdout and every error the envelope
{"error":{"code":"WORKSPACE_NOT_FOUND","message":"...","problems":[]},"status":404}.`,
		Example: `  dsh serve --http 127.0.0.1:8765 &
  dsh world create demo --ttl 2h --allow github.com:443
  dsh world exec demo -- sh -c 'git clone https://github.com/dsh-dev/dsh && ls dsh'
  dsh world cp ./notes.txt demo:notes.txt
  dsh world pause demo && dsh world resume demo
  dsh world rm demo`,
		Args: cobra.ArbitraryArgs,
		RunE: groupRunE,
	}
	pf := cmd.PersistentFlags()
	pf.String("server", "", "URL of the dsh server (default $"+worldServerEnv+", else "+worldDefaultServer+")")
	pf.String("token-file", "", "file holding the bearer token (default $"+worldTokenEnv+")")
	pf.Bool("json", false, "print the answer as JSON (errors as the --json envelope)")
	cmd.AddCommand(newWorldCreateCmd(), newWorldLsCmd(), newWorldGetCmd(), newWorldExecCmd(), newWorldCpCmd(),
		newWorldExtendCmd(), newWorldStateCmd("pause"), newWorldStateCmd("resume"), newWorldRmCmd())
	return cmd
}

// worldClient makes the client of cmd's server and token.
func worldClient(cmd *cobra.Command) (*client.Client, error) {
	server, _ := cmd.Flags().GetString("server")
	if server == "" {
		server = os.Getenv(worldServerEnv)
	}
	if server == "" {
		server = worldDefaultServer
	}
	token := os.Getenv(worldTokenEnv)
	if file, _ := cmd.Flags().GetString("token-file"); file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, &usageError{fmt.Errorf("--token-file: %v; give a readable file holding the token", err)}
		}
		token = strings.TrimSpace(string(b))
		if token == "" {
			return nil, &usageError{fmt.Errorf("--token-file %s is empty; it must hold the bearer token", file)}
		}
	}
	c, err := client.New(server, token, &http.Client{})
	if err != nil {
		return nil, &usageError{fmt.Errorf("--server / $%s: %v", worldServerEnv, err)}
	}
	return c, nil
}

// worldExit turns a client error into dsh's exit error (status code,
// unless the command is exec): the API's code as WORKSPACE_<CODE> and the
// HTTP status beside it in the --json envelope.
func worldExit(err error, code int) error {
	var ae *client.Error
	var ce *client.ConnError
	switch {
	case errors.As(err, &ae):
		return &exitError{code: code, msg: ae.Error(), jsonMsg: ae.Message, cause: err,
			jsonCode: "WORKSPACE_" + strings.ToUpper(ae.Code), extra: map[string]any{"status": ae.Status}}
	case errors.As(err, &ce):
		return &exitError{code: code, msg: err.Error(), cause: err, jsonCode: "SERVER_UNREACHABLE"}
	case errors.Is(err, context.Canceled):
		return &exitError{code: 130, msg: "interrupted", cause: err}
	}
	var ue *usageError
	if errors.As(err, &ue) {
		return err
	}
	return &exitError{code: code, msg: err.Error(), cause: err}
}

// worldName checks a NAME argument.
func worldName(name string) error {
	if err := client.CheckName(name); err != nil {
		return &usageError{err}
	}
	return nil
}

// withProgress runs op; if it takes longer than worldProgressAfter it
// says so on stderr, every few seconds, and when it ends.
func withProgress(cmd *cobra.Command, what string, op func() error) error {
	done := make(chan struct{})
	var wg sync.WaitGroup
	var shown time.Time
	start := time.Now()
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTimer(worldProgressAfter)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if shown.IsZero() {
					fmt.Fprintf(cmd.ErrOrStderr(), "%s...\n", what)
					shown = time.Now()
				} else {
					fmt.Fprintf(cmd.ErrOrStderr(), "%s... (%s)\n", what, time.Since(start).Round(time.Second))
				}
				t.Reset(5 * time.Second)
			}
		}
	}()
	err := op()
	close(done)
	wg.Wait()
	if !shown.IsZero() && err == nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "%s: done in %s\n", what, time.Since(start).Round(100*time.Millisecond))
	}
	return err
}

func newWorldCreateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "create [NAME] [--driver D] [--image IMG] [--ttl DUR] [--idle-timeout DUR] [--allow ENTRY]... [--memory SIZE] [--pids N] [--cpus N] [--label K=V]...",
		Short: "Create a workspace and print its name and, once, its token",
		Long: `Create a workspace on the server. Without NAME the server generates one
("ws-" and 10 hex digits). Zero values (no --ttl, no limits) take the
server's defaults. A workspace without --allow has no network at all.

The name goes to stdout; the workspace's own token - which reaches only
this workspace's routes and MCP endpoint, and is shown only now - goes to
stderr. With --json the whole answer ({"workspace":{...},"token":"..."})
goes to stdout. A create that takes longer than a second reports progress
on stderr.`,
		Example: `  dsh world create
  dsh world create demo --driver docker --image dsh/base --ttl 2h --memory 512MiB --pids 256
  dsh world create ci-42 --allow github.com:443 --allow proxy.golang.org:443 --label job=42
  TOKEN=$(dsh world create agent --json | jq -r .token)`,
		Args: cobra.MaximumNArgs(1),
		RunE: runWorldCreate,
	}
	f := cmd.Flags()
	f.String("driver", "", "driver of the world: native or docker (default: the server's)")
	f.String("image", "", "image of the world (docker)")
	f.Duration("ttl", 0, "delete the workspace this long after creation (default: the server's)")
	f.Duration("idle-timeout", 0, "stop the world (files kept) after this long without a request (default: the server's)")
	f.StringArray("allow", nil, "egress entry the world may reach: HOST:PORT or CIDR, as dsh run --allow (repeatable)")
	f.String("memory", "", "memory limit such as 256MiB or 1G (default: the server's)")
	f.Int("pids", 0, "process limit (default: the server's)")
	f.Float64("cpus", 0, "CPU limit in cores, such as 0.5 (default: the server's)")
	f.StringArray("label", nil, "label K=V (repeatable)")
	return cmd
}

func runWorldCreate(cmd *cobra.Command, args []string) error {
	f := cmd.Flags()
	req := &workspace.CreateRequest{}
	if len(args) == 1 {
		if err := worldName(args[0]); err != nil {
			return err
		}
		req.Name = args[0]
	}
	req.Driver, _ = f.GetString("driver")
	req.Image, _ = f.GetString("image")
	req.Limits.Memory, _ = f.GetString("memory")
	req.Limits.Pids, _ = f.GetInt("pids")
	req.Limits.CPUs, _ = f.GetFloat64("cpus")
	ttl, _ := f.GetDuration("ttl")
	idle, _ := f.GetDuration("idle-timeout")
	for flag, d := range map[string]time.Duration{"--ttl": ttl, "--idle-timeout": idle} {
		if d < 0 {
			return &usageError{fmt.Errorf("%s %s is negative; give a duration such as 2h", flag, d)}
		}
	}
	if req.Limits.Pids < 0 || req.Limits.CPUs < 0 {
		return &usageError{errors.New("--pids and --cpus must not be negative")}
	}
	req.TTL, req.IdleTimeout = workspace.Duration(ttl), workspace.Duration(idle)
	req.Allow, _ = f.GetStringArray("allow")
	labels, _ := f.GetStringArray("label")
	for _, l := range labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return &usageError{fmt.Errorf("--label %q: write it as KEY=VALUE", l)}
		}
		if req.Labels == nil {
			req.Labels = map[string]string{}
		}
		req.Labels[k] = v
	}
	c, err := worldClient(cmd)
	if err != nil {
		return err
	}
	ctx, stop, _ := interruptContext(cmd.Context())
	defer stop()
	what := "creating a workspace"
	if req.Name != "" {
		what = "creating workspace " + req.Name
	}
	var cr *workspace.Created
	err = withProgress(cmd, what, func() (err error) {
		cr, err = c.Create(ctx, req)
		return err
	})
	if err != nil {
		return worldExit(err, statusFailed)
	}
	if wantsJSON(cmd) {
		return writeJSON(cmd.OutOrStdout(), cr)
	}
	fmt.Fprintln(cmd.OutOrStdout(), cr.Workspace.Name)
	pooled := ""
	if cr.Workspace.Pooled {
		pooled = ", from the warm pool"
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "created workspace %s (%s%s), expires %s\ntoken (shown once; it reaches only this workspace): %s\n",
		cr.Workspace.Name, cr.Workspace.Driver, pooled, cr.Workspace.ExpiresAt.Local().Format(time.RFC3339), cr.Token)
	return nil
}

func newWorldLsCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the server's workspaces",
		Long: `List every workspace of the server (the server's token only): name, state,
driver, image, expiry and labels. --json prints {"workspaces":[...]}.`,
		Example: `  dsh world ls
  dsh world ls --json | jq -r '.workspaces[] | select(.state=="paused") | .name'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := worldClient(cmd)
			if err != nil {
				return err
			}
			list, err := c.List(cmd.Context())
			if err != nil {
				return worldExit(err, statusFailed)
			}
			if wantsJSON(cmd) {
				if list == nil {
					list = []workspace.Workspace{}
				}
				return writeJSON(cmd.OutOrStdout(), map[string]any{"workspaces": list})
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSTATE\tDRIVER\tIMAGE\tEXPIRES\tLABELS")
			for _, w := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", w.Name, w.State, w.Driver, orDash(w.Image), untilText(w.ExpiresAt), labelText(w.Labels))
			}
			return tw.Flush()
		},
	}
}

func newWorldGetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "get NAME",
		Short: "Show one workspace",
		Long:  `Show one workspace: its state, driver, limits, egress allowlist, times and labels. --json prints it as the API does.`,
		Example: `  dsh world get demo
  dsh world get demo --json | jq .expires_at`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := worldName(args[0]); err != nil {
				return err
			}
			c, err := worldClient(cmd)
			if err != nil {
				return err
			}
			w, err := c.Get(cmd.Context(), args[0])
			if err != nil {
				return worldExit(err, statusFailed)
			}
			return printWorkspace(cmd, w)
		},
	}
}

// printWorkspace prints w as --json or as key: value lines.
func printWorkspace(cmd *cobra.Command, w *workspace.Workspace) error {
	if wantsJSON(cmd) {
		return writeJSON(cmd.OutOrStdout(), w)
	}
	tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 1, ' ', 0)
	lim := []string{}
	if w.Limits.Memory != "" {
		lim = append(lim, "memory "+w.Limits.Memory)
	}
	if w.Limits.Pids != 0 {
		lim = append(lim, fmt.Sprintf("pids %d", w.Limits.Pids))
	}
	if w.Limits.CPUs != 0 {
		lim = append(lim, fmt.Sprintf("cpus %g", w.Limits.CPUs))
	}
	for _, kv := range [][2]string{
		{"name", w.Name}, {"state", w.State}, {"driver", w.Driver}, {"image", orDash(w.Image)},
		{"limits", orDash(strings.Join(lim, ", "))}, {"allow", orDash(strings.Join(w.Allow, " "))},
		{"world", orDash(w.World)}, {"created", w.CreatedAt.Local().Format(time.RFC3339)},
		{"expires", w.ExpiresAt.Local().Format(time.RFC3339) + " (" + untilText(w.ExpiresAt) + ")"},
		{"idle timeout", time.Duration(w.IdleTimeout).String()}, {"last used", w.LastUsed.Local().Format(time.RFC3339)},
		{"labels", labelText(w.Labels)},
	} {
		fmt.Fprintf(tw, "%s:\t%s\n", kv[0], kv[1])
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func untilText(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := time.Until(t).Round(time.Second)
	if d <= 0 {
		return "expired"
	}
	return "in " + d.String()
}

func labelText(l map[string]string) string {
	if len(l) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		keys[i] = k + "=" + l[k]
	}
	return strings.Join(keys, ",")
}

func newWorldExecCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "exec NAME [--env K=V]... [--dir D] [--timeout DUR] [--stdin] -- CMD [ARG...]",
		Short: "Run a command in a workspace, streaming its output",
		Long: `Run CMD in the workspace's world (reopened first if it was stopped),
streaming its stdout and stderr as they arrive, and exit with its status:
its exit code, 124 when --timeout ended it, 128+N when signal N killed it.
dsh's own failures (usage, the server refusing or not answering) exit 125,
as dsh run's do. --dir is relative to the workspace root; --stdin sends
dsh's stdin (read to its end first) as the command's.

With --json, stdout is the server's stream itself: one ExecEvent per line
({"stdout":"<base64>"}, {"stderr":"<base64>"}, then {"exit":{...}}).
Interrupted (^C), the request ends, the server ends the command, and dsh
exits 130.`,
		Example: `  dsh world exec demo -- make test
  dsh world exec demo --dir src --env GOFLAGS=-mod=mod -- go build ./...
  dsh world exec demo --timeout 30s -- sh -c 'sleep 60'   # exits 124
  tar c . | dsh world exec demo --stdin -- tar x`,
		Args:        cobra.MinimumNArgs(2),
		Annotations: map[string]string{failureStatusAnnotation: "125"},
		RunE:        runWorldExec,
	}
	f := cmd.Flags()
	f.StringArray("env", nil, "environment entry K=V of the command (repeatable)")
	f.String("dir", "", "working directory, relative to the workspace root")
	f.Duration("timeout", 0, "end the command after this long (default: the server's, 10m)")
	f.Bool("stdin", false, "send dsh's stdin as the command's stdin")
	return cmd
}

func runWorldExec(cmd *cobra.Command, args []string) error {
	if cmd.ArgsLenAtDash() != 1 {
		return &usageError{errors.New("write the command after --: dsh world exec NAME -- CMD [ARG...]")}
	}
	name := args[0]
	if err := worldName(name); err != nil {
		return err
	}
	f := cmd.Flags()
	req := &workspace.ExecRequest{Argv: args[1:]}
	req.Env, _ = f.GetStringArray("env")
	for _, e := range req.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return &usageError{fmt.Errorf("--env %q: write it as KEY=VALUE", e)}
		}
	}
	req.Dir, _ = f.GetString("dir")
	timeout, _ := f.GetDuration("timeout")
	if timeout < 0 {
		return &usageError{fmt.Errorf("--timeout %s is negative", timeout)}
	}
	req.Timeout = workspace.Duration(timeout)
	if in, _ := f.GetBool("stdin"); in {
		b, err := io.ReadAll(cmd.InOrStdin())
		if err != nil {
			return exitf(statusDshFailed, "reading stdin for --stdin: %v", err)
		}
		req.Stdin = b
	}
	c, err := worldClient(cmd)
	if err != nil {
		return err
	}
	ctx, stop, caught := interruptContext(cmd.Context())
	defer stop()
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	var events *eventWriter
	if wantsJSON(cmd) {
		events = &eventWriter{w: stdout}
		stdout, stderr = events.stream("stdout"), events.stream("stderr")
	}
	x, err := c.Exec(ctx, name, req, stdout, stderr)
	if err != nil {
		if caught() != nil {
			return &exitError{code: 130, msg: "interrupted", cause: err, jsonCode: "INTERRUPTED"}
		}
		return worldExit(err, statusDshFailed)
	}
	if events != nil {
		if err := writeJSON(events.w, workspace.ExecEvent{Exit: x}); err != nil {
			return err
		}
	}
	if s := client.ExitStatus(x); s != 0 {
		return exitCode(s)
	}
	return nil
}

// eventWriter writes output as ExecEvent lines (dsh world exec --json).
type eventWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (e *eventWriter) stream(which string) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		e.mu.Lock()
		defer e.mu.Unlock()
		ev := workspace.ExecEvent{}
		if which == "stdout" {
			ev.Stdout = p
		} else {
			ev.Stderr = p
		}
		if err := writeJSON(e.w, ev); err != nil {
			return 0, err
		}
		return len(p), nil
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// remoteArg matches NAME:PATH, the workspace side of dsh world cp.
var remoteArg = lazyre.New(`^([a-z0-9][a-z0-9-]{0,62}):(.*)$`)

func newWorldCpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "cp SRC DST",
		Short: "Copy a file between this machine and a workspace",
		Long: `Copy one file into or out of a workspace. One side is NAME:PATH (PATH
relative to the workspace root), the other a local path; "-" is stdin
(as SRC) or stdout (as DST). A local DST that is a directory gets the
file's base name. Uploads keep the local file's permission bits; the
server makes missing parent directories. A local path that contains a
":" is written ./a:b. --json prints {"from","to","bytes"}.`,
		Example: `  dsh world cp ./main.go demo:src/main.go
  dsh world cp demo:out/report.txt .
  dsh world cp demo:build.log - | tail
  echo hello | dsh world cp - demo:hello.txt`,
		Args: cobra.ExactArgs(2),
		RunE: runWorldCp,
	}
}

func runWorldCp(cmd *cobra.Command, args []string) error {
	src, dst := remoteArg().FindStringSubmatch(args[0]), remoteArg().FindStringSubmatch(args[1])
	switch {
	case src != nil && dst != nil:
		return &usageError{errors.New("both SRC and DST name a workspace; one side must be a local path (or -)")}
	case src == nil && dst == nil:
		return &usageError{fmt.Errorf("neither %q nor %q is NAME:PATH; one side must name the workspace, such as demo:notes.txt", args[0], args[1])}
	}
	c, err := worldClient(cmd)
	if err != nil {
		return err
	}
	ctx, stop, _ := interruptContext(cmd.Context())
	defer stop()
	var n int64
	from, to := args[0], args[1]
	if dst != nil {
		n, err = cpUp(ctx, cmd, c, args[0], dst[1], dst[2])
	} else {
		n, to, err = cpDown(ctx, cmd, c, src[1], src[2], args[1])
	}
	if err != nil {
		return err
	}
	if wantsJSON(cmd) {
		if to == "-" {
			return nil // stdout holds the file
		}
		return writeJSON(cmd.OutOrStdout(), map[string]any{"from": from, "to": to, "bytes": n})
	}
	return nil
}

func cpUp(ctx context.Context, cmd *cobra.Command, c *client.Client, local, name, path string) (int64, error) {
	if strings.Trim(path, "/") == "" {
		return 0, &usageError{fmt.Errorf("%s:%s names no file; give the path inside the workspace, such as %s:notes.txt", name, path, name)}
	}
	var r io.Reader
	var mode os.FileMode
	if local == "-" {
		r = cmd.InOrStdin()
	} else {
		f, err := os.Open(local)
		if err != nil {
			return 0, exitf(statusFailed, "%v", err)
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return 0, exitf(statusFailed, "%v", err)
		}
		if !fi.Mode().IsRegular() {
			return 0, &usageError{fmt.Errorf("%s is not a regular file; dsh world cp copies one file (pack a directory: tar c DIR | dsh world exec NAME --stdin -- tar x)", local)}
		}
		r, mode = f, fi.Mode().Perm()
	}
	cr := &countingReader{r: r}
	if err := c.WriteFile(ctx, name, path, cr, mode); err != nil {
		return 0, worldExit(err, statusFailed)
	}
	return cr.n, nil
}

func cpDown(ctx context.Context, cmd *cobra.Command, c *client.Client, name, path, local string) (int64, string, error) {
	if strings.Trim(path, "/") == "" {
		return 0, "", &usageError{fmt.Errorf("%s:%s names no file; give the path inside the workspace", name, path)}
	}
	if local == "-" {
		n, err := c.ReadFile(ctx, name, path, cmd.OutOrStdout())
		if err != nil {
			return n, "", worldExit(err, statusFailed)
		}
		return n, "-", nil
	}
	if fi, err := os.Stat(local); err == nil && fi.IsDir() {
		local = filepath.Join(local, filepath.Base(path))
	}
	// Written beside its destination and renamed: a failed copy leaves
	// no half file.
	tmp, err := os.CreateTemp(filepath.Dir(local), "."+filepath.Base(local)+".dsh-*")
	if err != nil {
		return 0, "", exitf(statusFailed, "%v", err)
	}
	defer os.Remove(tmp.Name())
	n, err := c.ReadFile(ctx, name, path, tmp)
	if cerr := tmp.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return n, "", worldExit(err, statusFailed)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return n, "", exitf(statusFailed, "%v", err)
	}
	if err := os.Rename(tmp.Name(), local); err != nil {
		return n, "", exitf(statusFailed, "%v", err)
	}
	return n, local, nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func newWorldExtendCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "extend NAME DUR",
		Short: "Move a workspace's expiry to DUR from now (never earlier)",
		Long:  `Move the workspace's expiry to now+DUR, or leave it if it is later already, up to the server's maximum TTL. It prints the new expiry; --json the workspace.`,
		Example: `  dsh world extend demo 2h
  dsh world extend demo 30m --json | jq .expires_at`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := worldName(args[0]); err != nil {
				return err
			}
			by, err := time.ParseDuration(args[1])
			if err != nil || by <= 0 {
				return &usageError{fmt.Errorf("duration %q: give a positive Go duration such as 30m or 2h", args[1])}
			}
			c, err := worldClient(cmd)
			if err != nil {
				return err
			}
			w, err := c.Extend(cmd.Context(), args[0], by)
			if err != nil {
				return worldExit(err, statusFailed)
			}
			if wantsJSON(cmd) {
				return writeJSON(cmd.OutOrStdout(), w)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s expires %s (%s)\n", w.Name, w.ExpiresAt.Local().Format(time.RFC3339), untilText(w.ExpiresAt))
			return nil
		},
	}
}

// newWorldStateCmd is dsh world pause or dsh world resume.
func newWorldStateCmd(verb string) *cobra.Command {
	short, long, example := "Freeze every process of a workspace, keeping its memory",
		`Freeze every process of the workspace's world (the cgroup freezer, or the
engine's pause): its memory is kept, nothing runs, and exec and files are
refused (conflict) until dsh world resume. --json prints the workspace.`,
		`  dsh world pause demo
  dsh world exec demo -- true   # refused while paused`
	if verb == "resume" {
		short, long, example = "Thaw a paused workspace",
			`Thaw a paused workspace: its processes go on where they stopped. --json prints the workspace.`,
			`  dsh world resume demo`
	}
	return &cobra.Command{
		Use:     verb + " NAME",
		Short:   short,
		Long:    long,
		Example: example,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := worldName(args[0]); err != nil {
				return err
			}
			c, err := worldClient(cmd)
			if err != nil {
				return err
			}
			op := c.Pause
			if verb == "resume" {
				op = c.Resume
			}
			w, err := op(cmd.Context(), args[0])
			if err != nil {
				return worldExit(err, statusFailed)
			}
			if wantsJSON(cmd) {
				return writeJSON(cmd.OutOrStdout(), w)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", w.Name, w.State)
			return nil
		},
	}
}

func newWorldRmCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "rm NAME...",
		Aliases: []string{"delete"},
		Short:   "Delete workspaces: their worlds, files and state",
		Long: `Delete each named workspace: its world is closed and its files and state
removed. Every name is tried; if any fails, dsh exits 1 after the others.
--json prints {"removed":[...],"failed":[{"name","code","status","message"}]}.`,
		Example: `  dsh world rm demo
  dsh world rm $(dsh world ls --json | jq -r '.workspaces[].name')`,
		Args: cobra.MinimumNArgs(1),
		RunE: runWorldRm,
	}
}

type worldRmFailure struct {
	Name    string `json:"name"`
	Code    string `json:"code"`
	Status  int    `json:"status,omitempty"`
	Message string `json:"message"`
}

func runWorldRm(cmd *cobra.Command, args []string) error {
	for _, n := range args {
		if err := worldName(n); err != nil {
			return err
		}
	}
	c, err := worldClient(cmd)
	if err != nil {
		return err
	}
	removed, failed := []string{}, []worldRmFailure{}
	for _, n := range args {
		err := c.Delete(cmd.Context(), n)
		if err == nil {
			removed = append(removed, n)
			if !wantsJSON(cmd) {
				fmt.Fprintln(cmd.OutOrStdout(), n)
			}
			continue
		}
		var ee *exitError
		fl := worldRmFailure{Name: n, Message: err.Error()}
		if errors.As(worldExit(err, statusFailed), &ee) {
			fl.Code = ee.jsonCode
		}
		var ae *client.Error
		if errors.As(err, &ae) {
			fl.Status, fl.Message = ae.Status, ae.Message
		}
		if fl.Code == "" {
			fl.Code = "FAILED"
		}
		failed = append(failed, fl)
		if !wantsJSON(cmd) {
			fmt.Fprintf(cmd.ErrOrStderr(), "dsh: removing %s: %v\n", n, err)
		}
	}
	if wantsJSON(cmd) {
		if err := writeJSON(cmd.OutOrStdout(), map[string]any{"removed": removed, "failed": failed}); err != nil {
			return err
		}
	}
	if len(failed) > 0 {
		return &exitError{code: statusFailed, written: true}
	}
	return nil
}
