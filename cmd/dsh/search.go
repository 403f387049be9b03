package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dsh-dev/dsh/web"
)

func newSearchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "search [--provider ID] [--json] [-q QUERY]... [WORD...]",
		Short: "Search the web with the configured provider",
		Long: `Search the web the way the web_search tool does and print up to 8 results
merged by rank and de-duplicated by URL.

The words on the command line form ONE query ("dsh search hello world"
searches for "hello world"); each -q/--query adds another, for 1 to 4
queries in all (the words' query first). Duplicate queries run once.

Providers: searxng (web.search.searxng_url, a SearXNG instance with the json
format enabled) and brave (Brave Search API, key in $BRAVE_API_KEY or the
variable named by web.search.brave_key_env). With no provider configured,
the single usable one is used; several usable ones are an error.
Errors exit 1 with a code such as WEB_PROVIDER_UNAVAILABLE; no query at
all is a usage error (exit 2). Interrupted (^C) it exits 130.`,
		Example: `  dsh search golang context cancellation
  dsh search -q "rust async" -q "tokio select" --json`,
		RunE: runSearch,
	}
	cmd.Flags().String("provider", "", "search provider id: searxng or brave (overrides web.search.provider)")
	bindConfigFlag(cmd, "provider", "web.search.provider")
	cmd.Flags().StringArrayP("query", "q", nil, "a query of its own (repeatable; the words on the command line are one more)")
	_ = cmd.RegisterFlagCompletionFunc("provider", cobra.FixedCompletions([]string{"searxng", "brave"}, cobra.ShellCompDirectiveNoFileComp))
	cmd.Flags().Bool("json", false, `print {"provider","queries","sources":[{"title","url","snippet"}]} (or the error envelope with "queries")`)
	return cmd
}

// searchQueries returns the queries of a command line: the words joined
// into one, then each --query.
func searchQueries(cmd *cobra.Command, args []string) []string {
	var qs []string
	if len(args) > 0 {
		qs = append(qs, strings.Join(args, " "))
	}
	more, _ := cmd.Flags().GetStringArray("query")
	return append(qs, more...)
}

func runSearch(cmd *cobra.Command, args []string) error {
	asJSON, _ := cmd.Flags().GetBool("json")
	queries := searchQueries(cmd, args)
	if len(queries) == 0 {
		return exitf(2, "dsh search needs a query: dsh search WORD... or -q QUERY (repeatable)")
	}
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
	ctx, stop, caught := interruptContext(cmd.Context())
	defer stop()
	res, err := reg.Search(ctx, s.Provider, queries)
	out := cmd.OutOrStdout()
	if err != nil {
		return webExit(err, caught(), map[string]any{"queries": queries})
	}
	if asJSON {
		return writeJSON(out, res)
	}
	fmt.Fprint(out, web.FormatSearch(res))
	return nil
}
