package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
)

// DefaultBraveURL is the Brave Search API's web search endpoint.
const DefaultBraveURL = "https://api.search.brave.com/res/v1/web/search"

// DefaultBraveKeyEnv is the environment variable read for the API key.
const DefaultBraveKeyEnv = "BRAVE_API_KEY"

// Brave searches with the Brave Search API. The key is read from the
// environment at every call, so setting it needs no restart.
type Brave struct {
	// KeyEnv names the variable holding the API key. If empty, BRAVE_API_KEY.
	KeyEnv string
	// LookupEnv reads the environment. If nil, os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// BaseURL is the endpoint. If empty, DefaultBraveURL.
	BaseURL string
	// Client sends the requests. If nil, a client without proxy or
	// cookies and a 30s timeout.
	Client *http.Client
}

// ID returns "brave".
func (b *Brave) ID() string { return "brave" }

func (b *Brave) keyEnv() string {
	if b.KeyEnv != "" {
		return b.KeyEnv
	}
	return DefaultBraveKeyEnv
}

func (b *Brave) key() string {
	lookup := b.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	v, _ := lookup(b.keyEnv())
	return v
}

// Available reports a missing API key.
func (b *Brave) Available() error {
	if b.key() == "" {
		return fmt.Errorf("no API key: set %s", b.keyEnv())
	}
	return nil
}

type braveAnswer struct {
	Web struct {
		Results []struct {
			Title       string `json:"title"`
			URL         string `json:"url"`
			Description string `json:"description"`
		} `json:"results"`
	} `json:"web"`
}

// Search runs one query.
func (b *Brave) Search(ctx context.Context, query string, max int) ([]Source, error) {
	key := b.key()
	if key == "" {
		return nil, newError(CodeUnavailable, "", "search provider brave has no API key: set %s", b.keyEnv())
	}
	endpoint := b.BaseURL
	if endpoint == "" {
		endpoint = DefaultBraveURL
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, wrapError(CodeProviderError, "", err, "brave endpoint %q is not a URL", endpoint)
	}
	count := max
	if count < 1 || count > 20 { // the API's range
		count = 20
	}
	u.RawQuery = url.Values{"q": {query}, "count": {strconv.Itoa(count)}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, wrapError(CodeProviderError, "", err, "building the brave request")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-Subscription-Token", key)
	client := b.Client
	if client == nil {
		client = newProviderClient()
	}
	var ans braveAnswer
	err = getJSON(ctx, client, b.ID(), req, &ans, func(status int) string {
		switch status {
		case http.StatusUnauthorized, http.StatusForbidden:
			return "check the API key in " + b.keyEnv()
		case http.StatusTooManyRequests:
			return "the plan's rate limit was hit; retry later"
		}
		return ""
	})
	if err != nil {
		return nil, err
	}
	var out []Source
	for _, r := range ans.Web.Results {
		if len(out) == max {
			break
		}
		if r.URL == "" {
			continue
		}
		out = append(out, Source{Title: plainText(r.Title), URL: r.URL, Snippet: plainText(r.Description)})
	}
	return out, nil
}
