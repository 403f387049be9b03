package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/dsh-dev/dsh/internal/config"
	"github.com/dsh-dev/dsh/netpolicy"
	"github.com/dsh-dev/dsh/web"
)

func newFetchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fetch [--policy FILE] [--allow ENTRY]... [--json] [--raw] [--fail] [--output FILE] URL",
		Short: "Fetch a URL under the web policy and print it as Markdown",
		Long: `Fetch one http(s) URL the way the web_fetch tool does: GET only, same-origin
redirects (at most web.fetch.max_redirects), text content types only, byte
and character caps, and every connection - every redirect hop included -
checked against the web policy (default: public addresses on ports 80 and
443; private, loopback and metadata addresses are refused).

HTML is printed as Markdown, other text as it came; --raw prints the
decoded body without conversion. Only the page goes to stdout (or to
--output FILE); the status line "Fetched URL (HTTP CODE)" and notes go to
stderr, so "dsh fetch URL > page.md" holds the page alone. A non-2xx
status is printed like any page; with --fail it writes no page and exits 1.

Errors exit 1 with a code: WEB_INVALID_URL (unparsable, too long, not
http or https), WEB_BLOCKED_URL (user info in the URL), NET_DENIED (the
web policy refused the destination), WEB_CONNECT_FAILED (refused,
unreachable or unresolvable upstream), WEB_REDIRECT_BLOCKED,
WEB_UNSUPPORTED_CONTENT_TYPE, WEB_FETCH_TOO_LARGE, WEB_FETCH_TIMEOUT,
WEB_PROVIDER_ERROR (any other failure). Interrupted (^C) it exits 130.`,
		Example: `  dsh fetch https://go.dev/doc/ > doc.md
  dsh fetch --fail --output page.md https://example.org/
  dsh fetch --json --allow 127.0.0.1:8080 http://127.0.0.1:8080/status`,
		Args: cobra.ExactArgs(1),
		RunE: runFetch,
	}
	addPolicyFlags(cmd)
	cmd.Flags().Bool("json", false, `print {"url","final_url","status","kind","content","truncated"} (or the error envelope with "url")`)
	cmd.Flags().Bool("raw", false, "print the decoded body without converting HTML to Markdown")
	cmd.Flags().Bool("fail", false, "exit 1 and write no page when the status is not 2xx")
	cmd.Flags().StringP("output", "o", "", "write the page (or the --json answer) to FILE instead of stdout")
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
	fail, _ := cmd.Flags().GetBool("fail")
	output, _ := cmd.Flags().GetString("output")
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

	ctx, stop, caught := interruptContext(cmd.Context())
	defer stop()
	res, err := f.Fetch(ctx, args[0])
	stderr := cmd.ErrOrStderr()
	if err != nil {
		return webExit(err, caught(), map[string]any{"url": args[0]})
	}
	failed := fail && (res.StatusCode < 200 || res.StatusCode > 299)
	if !asJSON {
		fmt.Fprintf(stderr, "Fetched %s (HTTP %d)\n", res.URL, res.StatusCode)
		if failed {
			return exitf(1, "%s answered HTTP %d (--fail: no page written)", res.URL, res.StatusCode)
		}
	}
	content, truncated := web.Render(res, raw)
	if err := writeOutput(cmd, output, func(w io.Writer) error {
		if asJSON {
			return writeJSON(w, fetchJSON{
				URL: args[0], FinalURL: res.URL, Status: res.StatusCode, Kind: res.Kind,
				Content: &content, Truncated: &truncated,
			})
		}
		if !raw && content != "" && !strings.HasSuffix(content, "\n") {
			content += "\n"
		}
		_, err := io.WriteString(w, content)
		return err
	}); err != nil {
		return exitf(1, "%v", err)
	}
	if truncated && !asJSON {
		fmt.Fprintln(stderr, "dsh: note: the body was truncated at the fetch limits")
	}
	if failed {
		return exitf(1, "%s answered HTTP %d (--fail)", res.URL, res.StatusCode)
	}
	return nil
}

// writeOutput writes through write to stdout, or to the file path when
// it is not "": a temporary file beside it renamed into place, so the
// file is the whole answer or untouched.
func writeOutput(cmd *cobra.Command, path string, write func(io.Writer) error) error {
	if path == "" || path == "-" {
		return write(cmd.OutOrStdout())
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("--output: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("--output %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("--output %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("--output %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("--output: %w", err)
	}
	return nil
}

// interruptContext is parent, cancelled on SIGINT or SIGTERM; caught
// reports the signal that cancelled it, or nil.
func interruptContext(parent context.Context) (ctx context.Context, stop func(), caught func() os.Signal) {
	ctx, cancel := context.WithCancel(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	var (
		mu  sync.Mutex
		got os.Signal
	)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			mu.Lock()
			got = s
			mu.Unlock()
			cancel()
		case <-done:
		}
	}()
	stop = func() {
		signal.Stop(ch)
		close(done)
		cancel()
	}
	caught = func() os.Signal {
		mu.Lock()
		defer mu.Unlock()
		return got
	}
	return ctx, stop, caught
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

// webExit makes dsh print the typed error and exit 1, or 128+N when
// signal N (^C: 130) interrupted the command; under --json the envelope
// carries its code and reason, and extra beside it.
func webExit(err error, sig os.Signal, extra map[string]any) error {
	code := statusFailed
	if s, ok := sig.(syscall.Signal); ok {
		code = 128 + int(s)
	}
	var ee *exitError
	var we *web.Error
	switch {
	case errors.As(err, &we):
		ee = exitf(code, "%v", we).(*exitError)
	case code != statusFailed:
		ee = exitf(code, "%s: interrupted: %v", web.CodeAborted, err).(*exitError)
	case errors.Is(err, context.Canceled):
		ee = exitf(code, "%s: %v", web.CodeAborted, err).(*exitError)
	default:
		ee = exitf(code, "%s: %v", web.CodeProviderError, err).(*exitError)
	}
	j := webErrorJSON(err)
	if (errors.Is(err, context.Canceled) || code != statusFailed) && we == nil {
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
