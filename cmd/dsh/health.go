package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// defaultHealthTimeout bounds one dsh health request.
const defaultHealthTimeout = 2 * time.Second

// healthResult is what dsh health --json prints.
type healthResult struct {
	URL        string `json:"url"`
	OK         bool   `json:"ok"`
	Status     int    `json:"status,omitempty"`
	Body       string `json:"body,omitempty"`
	Error      string `json:"error,omitempty"`
	DurationMS int64  `json:"duration_ms"`
}

func newHealthCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "health URL",
		Short: "Check that a dsh serve or dsh proxy answers its /healthz (for container healthchecks)",
		Long: `dsh health sends GET URL and exits 0 when the answer is 200, 1 otherwise
(no answer within --timeout, another status, a refused connection), 2 on a
bad URL. A URL without a path gets /healthz: dsh serve --http serves it
beside /mcp, dsh proxy beside /metrics.

It is the healthcheck of the dsh image, which has no shell or curl: the
binary answers it itself. It dials the URL directly, never through
HTTP_PROXY or HTTPS_PROXY, so a container whose traffic goes out through
a proxy still checks its own server.`,
		Example: `  dsh health http://127.0.0.1:8765
  dsh health --timeout 1s http://127.0.0.1:9090/healthz
  dsh health --json http://dsh:8765 | jq .ok
  # compose: healthcheck: {test: ["CMD", "/dsh", "health", "http://127.0.0.1:8765"]}`,
		Args: cobra.ExactArgs(1),
		RunE: runHealth,
	}
	cmd.Flags().Duration("timeout", defaultHealthTimeout, "give up after this long without a whole answer")
	cmd.Flags().Bool("json", false, "print the result as one JSON object")
	return cmd
}

func runHealth(cmd *cobra.Command, args []string) error {
	timeout, _ := cmd.Flags().GetDuration("timeout")
	asJSON, _ := cmd.Flags().GetBool("json")
	if timeout <= 0 {
		return exitf(statusUsage, "--timeout %v: give a positive duration such as 2s", timeout)
	}
	target, err := healthURL(args[0])
	if err != nil {
		return exitf(statusUsage, "%v", err)
	}
	res := checkHealth(cmd.Context(), target, timeout)
	out := cmd.OutOrStdout()
	if asJSON {
		if err := json.NewEncoder(out).Encode(res); err != nil {
			return err
		}
	} else if res.OK {
		fmt.Fprintf(out, "%s: ok (%d ms)\n", res.URL, res.DurationMS)
	}
	if res.OK {
		return nil
	}
	if asJSON {
		return exitCode(statusFailed)
	}
	if res.Error != "" {
		return exitf(statusFailed, "%s: not healthy: %s", res.URL, res.Error)
	}
	return exitf(statusFailed, "%s: not healthy: HTTP %d %q", res.URL, res.Status, res.Body)
}

// healthURL checks a URL dsh health can ask and gives it /healthz when it
// has no path.
func healthURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%q is not an http(s) URL with a host; give one such as http://127.0.0.1:8765", raw)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/healthz"
	}
	return u.String(), nil
}

// checkHealth asks target once, directly (no proxy), within timeout.
func checkHealth(ctx context.Context, target string, timeout time.Duration) (res healthResult) {
	res.URL = target
	start := time.Now()
	defer func() { res.DurationMS = time.Since(start).Milliseconds() }()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		res.Error = err.Error()
		if ctx.Err() != nil {
			res.Error = fmt.Sprintf("no answer within %v (--timeout)", timeout)
		}
		return res
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	res.Status, res.Body = resp.StatusCode, strings.TrimSpace(string(b))
	res.OK = resp.StatusCode == http.StatusOK
	return res
}
