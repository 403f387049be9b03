package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/dsh-dev/dsh/internal/config"
	"github.com/dsh-dev/dsh/lsp"
)

// newLSPCmd is dsh lsp: the four questions of the lsp tool, asked of a
// language server running inside a world, and the servers' status.
func newLSPCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lsp {definition|references|implementation|hover|status} ...",
		Short: "Ask a language server, confined in a world, about a symbol",
		Long: `Ask a language server about the symbol at FILE:LINE:COL: where it is defined,
where it is used (the declaration included), what implements it, or its
hover text (signature and documentation).

The server runs inside a world opened on the workspace (--workspace, default
the current directory), with the world's confinement and egress: gopls, for
one, runs offline (GOPROXY=off). It is picked by the file's extension from
the presets (gopls, typescript-language-server, pyright-langserver, clangd,
rust-analyzer) and lsp.servers; its command must resolve inside the world.

LINE and COL are 1-based; COL counts characters (code points), as editors
show them. FILE is absolute or relative to the workspace. Locations print as
path:line:column relative to the workspace.

Errors exit 1 with a code: LSP_UNAVAILABLE (no server for the extension, or
its command is not in the world), LSP_INVALID_FILE, LSP_INVALID_POSITION,
LSP_UNSUPPORTED_OPERATION, LSP_INDEXING (still indexing: try again),
LSP_TIMEOUT, LSP_SERVER_ERROR, LSP_SERVER_FAILED (with the server's stderr
tail), LSP_MALFORMED_RESPONSE, LSP_CONFLICT, LSP_WORKSPACE_REQUIRED.`,
		Example: `  dsh lsp definition main.go:12:9
  dsh lsp references --json internal/x/x.go:40:6
  dsh lsp hover --driver docker --image dsh/go:latest cmd/a/a.go:7:3
  dsh lsp status`,
	}
	for _, op := range lsp.OperationNames() {
		cmd.AddCommand(newLSPQueryCmd(op))
	}
	cmd.AddCommand(newLSPStatusCmd())
	return cmd
}

var lspShort = map[string]string{
	"definition":     "Print where the symbol at FILE:LINE:COL is defined",
	"references":     "Print every reference to the symbol at FILE:LINE:COL, its declaration included",
	"implementation": "Print the implementations of the interface or method at FILE:LINE:COL",
	"hover":          "Print the hover text (signature, documentation) of the symbol at FILE:LINE:COL",
}

func newLSPQueryCmd(op string) *cobra.Command {
	cmd := &cobra.Command{
		Use:     op + " [flags] FILE:LINE:COL",
		Short:   lspShort[op],
		Example: "  dsh lsp " + op + " main.go:12:9\n  dsh lsp " + op + " --json --workspace ~/src/app pkg/a.go:3:14",
		Args:    cobra.ExactArgs(1),
		RunE:    func(cmd *cobra.Command, args []string) error { return runLSPQuery(cmd, op, args[0]) },
	}
	addLSPFlags(cmd)
	cmd.Flags().Bool("json", false, `print {"kind":"locations","locations":[{"path","line","column","end_line","end_column"}]} or {"kind":"hover","contents"}`)
	return cmd
}

func newLSPStatusCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status [flags]",
		Short: "Print each language server and whether its command resolves in the world",
		Example: `  dsh lsp status
  dsh lsp status --json --driver docker --image dsh/go:latest`,
		Args: cobra.NoArgs,
		RunE: runLSPStatus,
	}
	addLSPFlags(cmd)
	cmd.Flags().Bool("json", false, `print [{"id","command","extensions","state","resolved","why"}]`)
	return cmd
}

// addLSPFlags registers the flags of the dsh lsp commands: a world's.
func addLSPFlags(cmd *cobra.Command) {
	addWorldFlags(cmd)
	cmd.Flags().Duration("timeout", 60*time.Second, "time budget of the whole query: world, server start and answer")
}

// parsePosition splits FILE:LINE:COL (FILE may hold colons).
func parsePosition(arg string) (file string, line, col int, err error) {
	i := strings.LastIndexByte(arg, ':')
	j := -1
	if i > 0 {
		j = strings.LastIndexByte(arg[:i], ':')
	}
	if j <= 0 {
		return "", 0, 0, fmt.Errorf("%q is not FILE:LINE:COL (such as main.go:12:9)", arg)
	}
	line, err1 := strconv.Atoi(arg[j+1 : i])
	col, err2 := strconv.Atoi(arg[i+1:])
	if err1 != nil || err2 != nil || line < 1 || col < 1 {
		return "", 0, 0, fmt.Errorf("%q: LINE and COL must be whole numbers from 1 (COL counts characters)", arg)
	}
	return arg[:j], line, col, nil
}

// lspWorld loads the configuration and opens the world the servers run
// in; image is a server's own image, used by the docker driver when
// neither --image nor sandbox.image says another.
func lspWorld(cmd *cobra.Command, pick func([]lsp.ServerConfig) string) (*lspSession, error) {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return nil, err
	}
	servers, err := lspServers(cfg.LSP)
	if err != nil {
		return nil, &configError{err}
	}
	if img := pick(servers); img != "" && !cmd.Flags().Changed("image") && cfg.Sandbox.Image == config.Default().Sandbox.Image {
		cfg.Sandbox.Image = img
	}
	plan, err := planWorld(cfg, worldFlags(cmd))
	if err != nil {
		return nil, &usageError{err}
	}
	plan.warnUnconfined(cmd.ErrOrStderr())
	timeout, _ := cmd.Flags().GetDuration("timeout")
	ctx, stop, caught := interruptContext(cmd.Context())
	ctx, cancel := context.WithTimeout(ctx, timeout)
	s := &lspSession{ctx: ctx, caught: caught, stop: func() { cancel(); stop() }}
	w, err := openWorld(ctx, plan, cmd.ErrOrStderr())
	if err != nil {
		s.stop()
		return nil, lspExit(fmt.Errorf("opening the world: %w", err), caught())
	}
	c, err := lsp.New(w, &lsp.Options{Servers: servers})
	if err != nil {
		w.Close()
		s.stop()
		return nil, lspExit(err, nil)
	}
	s.client = c
	s.close = func() { c.Close(); w.Close() }
	return s, nil
}

type lspSession struct {
	ctx    context.Context
	caught func() os.Signal
	stop   func()
	client *lsp.Client
	close  func()
}

func (s *lspSession) Close() { s.close(); s.stop() }

// lspLocationJSON is one location of dsh lsp --json.
type lspLocationJSON struct {
	Path      string `json:"path"`
	Line      int    `json:"line"`
	Column    int    `json:"column"`
	EndLine   int    `json:"end_line"`
	EndColumn int    `json:"end_column"`
}

type lspResultJSON struct {
	Kind      lsp.Kind          `json:"kind"`
	Locations []lspLocationJSON `json:"locations,omitempty"`
	Contents  *string           `json:"contents,omitempty"`
}

func runLSPQuery(cmd *cobra.Command, opName, arg string) error {
	op, err := lsp.ParseOperation(opName)
	if err != nil {
		return &usageError{err}
	}
	file, line, col, err := parsePosition(arg)
	if err != nil {
		return &usageError{err}
	}
	ext := lsp.Route(file)
	s, err := lspWorld(cmd, func(servers []lsp.ServerConfig) string {
		for _, sc := range servers {
			if _, ok := sc.Extensions[ext]; ok {
				return sc.Image
			}
		}
		return ""
	})
	if err != nil {
		return err
	}
	defer s.Close()
	res, err := s.client.Query(s.ctx, lsp.Query{Op: op, File: file, Line: line, Column: col})
	if err != nil {
		return lspExit(err, s.caught())
	}
	if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
		out := lspResultJSON{Kind: res.Kind}
		if res.Kind == lsp.KindHover {
			if res.HasHover {
				out.Contents = &res.Hover
			} else {
				out.Contents = new(string)
			}
		} else {
			out.Locations = []lspLocationJSON{}
			for _, l := range res.Locations {
				out.Locations = append(out.Locations, lspLocationJSON{l.DisplayPath(), l.Line, l.Column, l.EndLine, l.EndColumn})
			}
		}
		return writeJSON(cmd.OutOrStdout(), out)
	}
	_, err = fmt.Fprintln(cmd.OutOrStdout(), lsp.Render(res, nil))
	return err
}

// lspExit is an lsp error as dsh reports it: status 1 (128+N when
// signal N interrupted), the error's code in the --json envelope.
func lspExit(err error, sig os.Signal) error {
	code := statusFailed
	if s, ok := sig.(syscall.Signal); ok {
		code = 128 + int(s)
	}
	ee := exitf(code, "%v", err).(*exitError)
	var le *lsp.Error
	if errors.As(err, &le) {
		ee.jsonCode, ee.jsonMsg = le.Code.String(), le.Msg
	} else {
		ee.jsonCode = lsp.CodeUnavailable.String()
	}
	return ee
}

func runLSPStatus(cmd *cobra.Command, _ []string) error {
	s, err := lspWorld(cmd, func([]lsp.ServerConfig) string { return "" })
	if err != nil {
		return err
	}
	defer s.Close()
	st := s.client.Status(s.ctx)
	if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
		return writeJSON(cmd.OutOrStdout(), st)
	}
	return printLSPStatus(cmd.OutOrStdout(), st)
}

func printLSPStatus(w io.Writer, st []lsp.ServerStatus) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tSTATE\tCOMMAND\tEXTENSIONS")
	for _, s := range st {
		cmdText := s.Command
		if s.Resolved != "" {
			cmdText = s.Resolved
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.ID, s.State, cmdText, strings.Join(s.Extensions, " "))
	}
	return tw.Flush()
}
