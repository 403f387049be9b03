package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/dsh-dev/dsh/internal/config"
)

func newMCPImportCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import FILE [--json]",
		Short: "Turn an agent's MCP server list into mcp.servers entries",
		Long: `dsh mcp import reads the MCP servers of an agent's configuration - Claude
Desktop's claude_desktop_config.json, Claude Code's .mcp.json, Cursor's
mcp.json (mcpServers) or Codex's config.toml ([mcp_servers.NAME]) - and
prints them as a dsh.yaml fragment, so the servers you already use run
confined. Secrets are never copied: an env or header value becomes a
${NAME} reference to a host variable, and each server starts with the
narrowest world (workspace none, no egress). Notes on stderr say what to
export and what to widen.`,
		Example: `  dsh mcp import ~/.config/Claude/claude_desktop_config.json >> dsh.yaml
  dsh mcp import .cursor/mcp.json
  dsh mcp import ~/.codex/config.toml --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := os.ReadFile(args[0])
			if err != nil {
				return &usageError{fmt.Errorf("reading %s: %w", args[0], err)}
			}
			servers, notes, err := config.ImportMCP(args[0], data)
			if err != nil {
				return exitf(statusFailed, "%v", err)
			}
			if wantsJSON(cmd) {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"servers": servers, "notes": notes})
			}
			out, err := config.ImportYAML(servers)
			if err != nil {
				return err
			}
			if _, err := cmd.OutOrStdout().Write(out); err != nil {
				return err
			}
			for _, n := range notes {
				fmt.Fprintln(cmd.ErrOrStderr(), "dsh: note:", n)
			}
			return nil
		},
	}
	cmd.Flags().Bool("json", false, `print {"servers":[...],"notes":[...]}`)
	return cmd
}
