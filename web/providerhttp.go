package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"golang.org/x/net/html"
)

// maxProviderResponse bounds a search API's JSON answer.
const maxProviderResponse = 4 << 20

// defaultProviderTimeout bounds one search request when the caller's
// context has no deadline.
const defaultProviderTimeout = 30 * time.Second

// newProviderClient returns the HTTP client search providers use when
// none is given. Search endpoints are chosen by the operator in
// configuration, not by the model, so they are not held to the web fetch
// policy (a compose deployment's SearXNG lives on a private network). No
// proxy from the environment, no cookies.
func newProviderClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	return &http.Client{Transport: t, Timeout: defaultProviderTimeout}
}

// getJSON sends req and decodes a 200 JSON answer into v. hint is added
// to the message of a non-200 status (what to check at the provider).
func getJSON(ctx context.Context, client *http.Client, id string, req *http.Request, v any, hint func(status int) string) error {
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return wrapError(CodeAborted, "", context.Cause(ctx), "search with %s was cancelled", id)
		}
		return wrapError(CodeProviderError, "", unwrapURLError(err), "search provider %s could not be reached at %s", id, redactQuery(req))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		msg := fmt.Sprintf("search provider %s answered HTTP %d", id, resp.StatusCode)
		if s := strings.TrimSpace(string(body)); s != "" {
			msg += ": " + truncateForMessage(strings.ToValidUTF8(s, "?"))
		}
		if h := hint(resp.StatusCode); h != "" {
			msg += "; " + h
		}
		return &Error{Code: CodeProviderError, Msg: msg}
	}
	dec := json.NewDecoder(io.LimitReader(resp.Body, maxProviderResponse))
	if err := dec.Decode(v); err != nil {
		if ctx.Err() != nil {
			return wrapError(CodeAborted, "", context.Cause(ctx), "search with %s was cancelled", id)
		}
		var se *json.SyntaxError
		if errors.As(err, &se) || errors.Is(err, io.ErrUnexpectedEOF) {
			return wrapError(CodeProviderError, "", err, "search provider %s returned malformed JSON", id)
		}
		return wrapError(CodeProviderError, "", err, "reading the answer of search provider %s", id)
	}
	return nil
}

// redactQuery names the endpoint of req without its query string, which
// may hold the search terms.
func redactQuery(req *http.Request) string {
	u := *req.URL
	u.RawQuery = ""
	return u.String()
}

// plainText strips HTML tags and entities from a snippet (Brave marks
// matches with <strong>).
func plainText(s string) string {
	if !strings.ContainsAny(s, "<&") {
		return strings.TrimSpace(s)
	}
	z := html.NewTokenizer(strings.NewReader(s))
	var b strings.Builder
	for {
		switch z.Next() {
		case html.ErrorToken:
			return strings.TrimSpace(b.String())
		case html.TextToken:
			b.Write(z.Text())
		}
	}
}
