package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// answered counts the requests a stdio session received and the
// responses written for them, so that a drain closes the session only
// once every call that finished has had its answer written: the
// session's close stops its stream as soon as no handler runs, which
// can be before the last response is out.
type answered struct {
	mu                sync.Mutex
	changed           chan struct{} // closed and replaced on every count
	received, written int
	w                 io.WriteCloser
}

func newAnswered(w io.WriteCloser) *answered {
	return &answered{w: w, changed: make(chan struct{})}
}

func (a *answered) bump(f func()) {
	a.mu.Lock()
	f()
	close(a.changed)
	a.changed = make(chan struct{})
	a.mu.Unlock()
}

// middleware counts every request that needs an answer (notifications
// get none).
func (a *answered) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if !strings.HasPrefix(method, "notifications/") {
			a.bump(func() { a.received++ })
		}
		return next(ctx, method, req)
	}
}

// Write passes p on and counts it when it is a response: a JSON-RPC
// message with an id and no method.
func (a *answered) Write(p []byte) (int, error) {
	n, err := a.w.Write(p)
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(p, &msg) == nil && len(msg.ID) > 0 && msg.Method == "" {
		a.bump(func() { a.written++ })
	}
	return n, err
}

func (a *answered) Close() error { return a.w.Close() }

// wait returns once every request received has its response written, or
// after limit.
func (a *answered) wait(limit time.Duration) {
	deadline := time.After(limit)
	for {
		a.mu.Lock()
		done, changed := a.written >= a.received, a.changed
		a.mu.Unlock()
		if done {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			return
		}
	}
}

// stdioTransport is the MCP stdio transport with its answers counted.
func stdioTransport(srv *mcp.Server) (*mcp.IOTransport, *answered) {
	a := newAnswered(os.Stdout)
	srv.AddReceivingMiddleware(a.middleware)
	return &mcp.IOTransport{Reader: os.Stdin, Writer: a}, a
}
