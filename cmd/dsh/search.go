package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/dsh-dev/dsh/web"
)

func newSearchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "search [--provider ID] [--json] QUERY...",
		Short: "Search the web with the configured provider",
		Long: `Run 1 to 4 queries, the way the web_search tool does, and print up to 8
results merged by rank and de-duplicated by URL. Duplicate queries run once.

Providers: searxng (web.search.searxng_url, a SearXNG instance with the json
format enabled) and brave (Brave Search API, key in $BRAVE_API_KEY or the
variable named by web.search.brave_key_env). With no provider configured,
the single usable one is used; several usable ones are an error.
Errors exit 1 with a code such as WEB_PROVIDER_UNAVAILABLE.`,
		Example: `  dsh search golang context cancellation
  dsh search --provider brave --json 'rust async runtime' | jq '.sources[].url'`,
		RunE: runSearch,
	}
	cmd.Flags().String("provider", "", "search provider id: searxng or brave (overrides web.search.provider)")
	bindConfigFlag(cmd, "provider", "web.search.provider")
	_ = cmd.RegisterFlagCompletionFunc("provider", cobra.FixedCompletions([]string{"searxng", "brave"}, cobra.ShellCompDirectiveNoFileComp))
	cmd.Flags().Bool("json", false, `print {"provider","queries","sources":[{"title","url","snippet"}]} (or the error envelope with "queries")`)
	return cmd
}

func runSearch(cmd *cobra.Command, args []string) error {
	asJSON, _ := cmd.Flags().GetBool("json")
	cfg, err := loadConfig(cmd)
	if err != nil {
		return err
	}
	s := cfg.Web.Search
	reg, err := web.NewRegistry(
		&web.SearXNG{BaseURL: s.SearXNGURL},
		&web.Brave{KeyEnv: s.BraveKeyEnv},
	)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := reg.Search(ctx, s.Provider, args)
	out := cmd.OutOrStdout()
	if err != nil {
		return webExit(err, map[string]any{"queries": append([]string{}, args...)})
	}
	if asJSON {
		return writeJSON(out, res)
	}
	fmt.Fprint(out, web.FormatSearch(res))
	return nil
}
