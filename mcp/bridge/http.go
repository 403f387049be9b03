package bridge

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-dev/dsh/execworld"
)

// HTTP is a Streamable HTTP server reached through a world's Net: every
// connection goes through the world's guarded dialer, so a destination
// its policy does not allow (private addresses unless an IP or CIDR
// entry allows them) is refused before any connect. The world is opened
// at the first Start; Close closes it.
type HTTP struct {
	// URL is the server's endpoint.
	URL string
	// Headers are sent with every request (secrets resolved).
	Headers map[string]string
	// World opens the world whose Net the requests go through. Required;
	// called once.
	World func(ctx context.Context) (*execworld.World, error)

	mu     sync.Mutex // guards the fields below
	w      *execworld.World
	closed bool
}

// Start makes a new Streamable HTTP connection.
func (h *HTTP) Start(ctx context.Context) (*Link, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	if h.w == nil {
		if h.World == nil {
			return nil, errors.New("bridge: HTTP.World is nil")
		}
		w, err := h.World(ctx)
		if err != nil {
			return nil, err
		}
		h.w = w
	}
	base := h.w.Net.HTTPClient()
	client := &http.Client{
		Transport:     &headerTransport{base: base.Transport, headers: h.Headers},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return &Link{Transport: &mcp.StreamableClientTransport{Endpoint: h.URL, HTTPClient: client, MaxRetries: 1}}, nil
}

// WorldID is the ID of the world whose Net the requests use.
func (h *HTTP) WorldID() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.w == nil {
		return ""
	}
	return h.w.ID
}

// Close closes the world.
func (h *HTTP) Close() error {
	h.mu.Lock()
	w := h.w
	h.w, h.closed = nil, true
	h.mu.Unlock()
	if w == nil {
		return nil
	}
	return w.Close()
}

// headerTransport adds the configured headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range t.headers {
			r.Header.Set(k, v)
		}
	}
	return t.base.RoundTrip(r)
}
