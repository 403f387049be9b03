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
	"time"

	"github.com/spf13/cobra"

	"github.com/dsh-dev/dsh/internal/config"
	"github.com/dsh-dev/dsh/netpolicy"
	"github.com/dsh-dev/dsh/web"
)

func newFetchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fetch [--policy FILE] [--allow ENTRY]... [--json] [--raw] URL",
		Short: "Fetch a URL under the web policy and print it as Markdown",
		Long: `Fetch one http(s) URL the way the web_fetch tool does: GET only, same-origin
redirects (at most web.fetch.max_redirects), text content types only, byte
and character caps, and every connection - every redirect hop included -
checked against the web policy (default: public addresses on ports 80 and
443; private, loopback and metadata addresses are refused).

HTML is printed as Markdown, other text as it came; --raw prints the
decoded body without conversion. A non-2xx status is printed like any page.
Errors exit 1 with a code such as NET_DENIED or WEB_FETCH_TOO_LARGE.`,
		Example: `  dsh fetch https://go.dev/doc/
  dsh fetch --raw https://example.com/robots.txt
  dsh fetch --json https://example.com | jq -r .content`,
		Args: cobra.ExactArgs(1),
		RunE: runFetch,
	}
	addPolicyFlags(cmd)
	cmd.Flags().Bool("json", false, `print {"url","final_url","status","kind","content","truncated"} (or the error envelope with "url")`)
	cmd.Flags().Bool("raw", false, "print the decoded body without converting HTML to Markdown")
	return cmd
}

// fetchJSON is dsh fetch --json's answer.
type fetchJSON struct {
	URL       string   `json:"url"`
	FinalURL  string   `json:"final_url,omitempty"`
	Status    int      `json:"status,omitempty"`
	Kind      web.Kind `json:"kind,omitempty"`
	Content   *string  `json:"content,omitempty"`
	Truncated *bool    `json:"truncated,omitempty"`
}

// errorJSON is a typed failure in --json output.
type errorJSON struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Reason is the policy's reason for NET_DENIED.
	Reason string `json:"reason,omitempty"`
}

func runFetch(cmd *cobra.Command, args []string) error {
	asJSON, _ := cmd.Flags().GetBool("json")
	raw, _ := cmd.Flags().GetBool("raw")
	cfg, err := loadConfig(cmd)
	if err != nil {
		return err
	}
	opts, err := fetchOptions(cmd, cfg)
	if err != nil {
		return err
	}
	f, err := web.NewFetcher(opts)
	if err != nil {
		return err
	}
	defer f.Close()

	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := f.Fetch(ctx, args[0])
	out := cmd.OutOrStdout()
	if err != nil {
		return webExit(err, map[string]any{"url": args[0]})
	}
	if !asJSON {
		if raw {
			content, truncated := web.Render(res, true)
			fmt.Fprint(out, content)
			if truncated {
				fmt.Fprintln(cmd.ErrOrStderr(), "dsh: note: the body was truncated at the fetch limits")
			}
			return nil
		}
		fmt.Fprintln(out, web.Format(res))
		return nil
	}
	content, truncated := web.Render(res, raw)
	return writeJSON(out, fetchJSON{
		URL: args[0], FinalURL: res.URL, Status: res.StatusCode, Kind: res.Kind,
		Content: &content, Truncated: &truncated,
	})
}

// fetchOptions builds the fetcher's options from the configuration and
// the policy flags.
func fetchOptions(cmd *cobra.Command, cfg *config.Config) (*web.FetchOptions, error) {
	// Validated, and never empty: its default is netpolicy.WebDefault.
	pol, err := policyFromFlags(cmd, cfg.Web.Policy)
	if err != nil {
		return nil, err
	}
	opts := &web.FetchOptions{
		Dialer:       &netpolicy.Dialer{Policy: pol},
		MaxBytes:     cfg.Web.Fetch.MaxBytes,
		MaxChars:     cfg.Web.Fetch.MaxChars,
		MaxRedirects: cfg.Web.Fetch.MaxRedirects,
	}
	if s := cfg.Web.Fetch.Timeout; s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("web.fetch.timeout %q is not a positive duration (for example 30s)", s)
		}
		opts.Timeout = d
	}
	return opts, nil
}

// webErrorJSON describes err for --json output.
func webErrorJSON(err error) *errorJSON {
	e := &errorJSON{Code: string(web.CodeProviderError), Message: err.Error()}
	var we *web.Error
	if errors.As(err, &we) {
		e.Code, e.Message, e.Reason = string(we.Code), we.Msg, we.Reason()
		if we.Err != nil && we.Code != web.CodeNetDenied {
			e.Message += ": " + we.Err.Error()
		}
	}
	return e
}

// webExit makes dsh print the typed error and exit 1; under --json the
// envelope carries its code and reason, and extra beside it.
func webExit(err error, extra map[string]any) error {
	var ee *exitError
	var we *web.Error
	switch {
	case errors.As(err, &we):
		ee = exitf(statusFailed, "%v", we).(*exitError)
	case errors.Is(err, context.Canceled):
		ee = exitf(statusFailed, "%s: %v", web.CodeAborted, err).(*exitError)
	default:
		ee = exitf(statusFailed, "%s: %v", web.CodeProviderError, err).(*exitError)
	}
	j := webErrorJSON(err)
	if errors.Is(err, context.Canceled) && we == nil {
		j.Code = string(web.CodeAborted)
	}
	ee.jsonCode, ee.reason, ee.extra = j.Code, j.Reason, extra
	// The envelope's message is the error's own, without the code prefix.
	ee.jsonMsg = j.Message
	return ee
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
