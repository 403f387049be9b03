package web

import (
	"context"
	"errors"
	"net/http"
	"net/url"
)

// SearXNG searches through a SearXNG instance's JSON API
// (GET <base>/search?q=...&format=json). The instance must allow the json
// format (search.formats in its settings.yml).
type SearXNG struct {
	// BaseURL is the instance, e.g. http://searxng:8080 (a path prefix is
	// kept). If empty, the provider is unavailable.
	BaseURL string
	// Client sends the requests. If nil, a client without proxy or
	// cookies and a 30s timeout.
	Client *http.Client
}

// ID returns "searxng".
func (s *SearXNG) ID() string { return "searxng" }

// Available reports a missing or malformed BaseURL.
func (s *SearXNG) Available() error {
	_, err := s.base()
	return err
}

func (s *SearXNG) base() (*url.URL, error) {
	if s.BaseURL == "" {
		return nil, errors.New("web.search.searxng_url is not set")
	}
	u, err := url.Parse(s.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("web.search.searxng_url " + `"` + s.BaseURL + `"` + " is not an http(s) URL")
	}
	return u, nil
}

type searxngAnswer struct {
	Results []struct {
		URL     string `json:"url"`
		Title   string `json:"title"`
		Content string `json:"content"`
	} `json:"results"`
}

// Search runs one query.
func (s *SearXNG) Search(ctx context.Context, query string, max int) ([]Source, error) {
	base, err := s.base()
	if err != nil {
		return nil, wrapError(CodeUnavailable, "", err, "search provider searxng is not configured")
	}
	u := base.JoinPath("search")
	u.RawQuery = url.Values{"q": {query}, "format": {"json"}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, wrapError(CodeProviderError, "", err, "building the searxng request")
	}
	req.Header.Set("Accept", "application/json")
	var ans searxngAnswer
	client := s.Client
	if client == nil {
		client = newProviderClient()
	}
	err = getJSON(ctx, client, s.ID(), req, &ans, func(status int) string {
		if status == http.StatusForbidden {
			return "the instance may not allow the json format: add json to search.formats in its settings.yml"
		}
		return ""
	})
	if err != nil {
		return nil, err
	}
	var out []Source
	for _, r := range ans.Results {
		if len(out) == max {
			break
		}
		if r.URL == "" {
			continue
		}
		out = append(out, Source{Title: plainText(r.Title), URL: r.URL, Snippet: plainText(r.Content)})
	}
	return out, nil
}
