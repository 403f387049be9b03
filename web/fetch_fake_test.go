package web

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// These tests drive the Fetcher through its Transport seam, with canned
// responses, to observe what the network tests cannot: exact deadlines
// (in synctest's fake time) and whether a body was read or closed.

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// trackedBody records reads and closes; it serves data, then blocks
// until ctx is done if stall is set.
type trackedBody struct {
	ctx    context.Context
	data   io.Reader
	stall  bool
	reads  atomic.Int32
	closed atomic.Bool
}

func (b *trackedBody) Read(p []byte) (int, error) {
	b.reads.Add(1)
	n, err := b.data.Read(p)
	if err == io.EOF && b.stall {
		<-b.ctx.Done()
		return n, b.ctx.Err()
	}
	return n, err
}

func (b *trackedBody) Close() error { b.closed.Store(true); return nil }

func response(req *http.Request, status int, header http.Header, body *trackedBody) *http.Response {
	if header == nil {
		header = http.Header{}
	}
	body.ctx = req.Context()
	return &http.Response{StatusCode: status, Header: header, Body: body, ContentLength: -1, Request: req}
}

func fakeFetcher(t *testing.T, opts FetchOptions, rt roundTripFunc) *Fetcher {
	t.Helper()
	opts.Transport = rt
	f, err := NewFetcher(&opts)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// stallUntilCancelled never answers; it returns when the request's
// context ends.
func stallUntilCancelled(req *http.Request) (*http.Response, error) {
	<-req.Context().Done()
	return nil, req.Context().Err()
}

func TestFetchDefaultTimeoutIs30s(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := fakeFetcher(t, FetchOptions{}, stallUntilCancelled)
		var err atomic.Pointer[error]
		done := make(chan struct{})
		go func() {
			_, e := f.Fetch(context.Background(), "http://example.com/")
			err.Store(&e)
			close(done)
		}()
		time.Sleep(DefaultTimeout - time.Nanosecond)
		synctest.Wait()
		select {
		case <-done:
			t.Fatalf("Fetch ended before %s: %v", DefaultTimeout, *err.Load())
		default:
		}
		time.Sleep(time.Nanosecond)
		<-done
		if CodeOf(*err.Load()) != CodeTimeout {
			t.Errorf("Fetch after %s = %v, want %s", DefaultTimeout, *err.Load(), CodeTimeout)
		}
	})
}

func TestFetchTimeoutDuringBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		body := &trackedBody{data: strings.NewReader("partial"), stall: true}
		f := fakeFetcher(t, FetchOptions{}, func(req *http.Request) (*http.Response, error) {
			return response(req, 200, http.Header{"Content-Type": {"text/plain"}}, body), nil
		})
		start := time.Now()
		_, err := f.Fetch(context.Background(), "http://example.com/")
		if CodeOf(err) != CodeTimeout {
			t.Errorf("stall in the body: %v, want %s", err, CodeTimeout)
		}
		if d := time.Since(start); d != DefaultTimeout {
			t.Errorf("timed out after %s (fake time), want %s", d, DefaultTimeout)
		}
		if !body.closed.Load() {
			t.Errorf("body not closed after the timeout")
		}
	})
}

func TestFetchCallerBudgetVersusOwn(t *testing.T) {
	tests := []struct {
		caller, own time.Duration
		want        Code
	}{
		{10 * time.Second, 30 * time.Second, CodeAborted}, // the caller's deadline is the caller's cancellation
		{60 * time.Second, 30 * time.Second, CodeTimeout},
	}
	for _, tt := range tests {
		synctest.Test(t, func(t *testing.T) {
			f := fakeFetcher(t, FetchOptions{Timeout: tt.own}, stallUntilCancelled)
			ctx, cancel := context.WithTimeout(context.Background(), tt.caller)
			defer cancel()
			start := time.Now()
			_, err := f.Fetch(ctx, "http://example.com/")
			if CodeOf(err) != tt.want || time.Since(start) != min(tt.caller, tt.own) {
				t.Errorf("caller %s, own %s: %v after %s, want %s after %s", tt.caller, tt.own, err, time.Since(start), tt.want, min(tt.caller, tt.own))
			}
		})
	}
}

func TestFetchRejectsBeforeReadingTheBody(t *testing.T) {
	tests := []struct {
		name   string
		status int
		header http.Header
		length int64
		code   Code
	}{
		{"unsupported type", 200, http.Header{"Content-Type": {"image/png"}}, -1, CodeUnsupportedContent},
		{"no type", 200, nil, -1, CodeUnsupportedContent},
		{"unknown charset", 200, http.Header{"Content-Type": {"text/html; charset=x-martian"}}, -1, CodeUnsupportedContent},
		{"declared too large", 200, http.Header{"Content-Type": {"text/html"}}, DefaultMaxBytes + 1, CodeTooLarge},
		{"redirect without location", 302, nil, -1, CodeProviderError},
		{"redirect off origin", 302, http.Header{"Location": {"http://other.example/"}}, -1, CodeRedirectBlocked},
		{"redirect to another scheme", 307, http.Header{"Location": {"file:///etc/passwd"}}, -1, CodeRedirectBlocked},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := &trackedBody{data: strings.NewReader(strings.Repeat("x", 1000))}
			f := fakeFetcher(t, FetchOptions{}, func(req *http.Request) (*http.Response, error) {
				r := response(req, tt.status, tt.header.Clone(), body)
				r.ContentLength = tt.length
				return r, nil
			})
			_, err := f.Fetch(context.Background(), "http://example.com/")
			if CodeOf(err) != tt.code {
				t.Errorf("Fetch = %v, want %s", err, tt.code)
			}
			if n := body.reads.Load(); n != 0 {
				t.Errorf("the body was read %d times before the rejection", n)
			}
			if !body.closed.Load() {
				t.Errorf("the body was not closed")
			}
		})
	}
}

func TestFetchClosesRedirectBodies(t *testing.T) {
	var bodies []*trackedBody
	f := fakeFetcher(t, FetchOptions{}, func(req *http.Request) (*http.Response, error) {
		b := &trackedBody{data: strings.NewReader("moved")}
		bodies = append(bodies, b)
		if req.URL.Path == "/end" {
			return response(req, 200, http.Header{"Content-Type": {"text/plain"}}, b), nil
		}
		return response(req, 301, http.Header{"Location": {"/end"}}, b), nil
	})
	if _, err := f.Fetch(context.Background(), "http://example.com/start"); err != nil {
		t.Fatal(err)
	}
	for i, b := range bodies {
		if !b.closed.Load() {
			t.Errorf("body %d not closed", i)
		}
	}
	if bodies[0].reads.Load() != 0 {
		t.Errorf("the redirect's body was read")
	}
}

func TestFetchTransportErrorIsProviderError(t *testing.T) {
	f := fakeFetcher(t, FetchOptions{}, func(*http.Request) (*http.Response, error) {
		return nil, errors.New("connection reset by peer")
	})
	if _, err := f.Fetch(context.Background(), "http://example.com/"); CodeOf(err) != CodeProviderError || !strings.Contains(err.Error(), "reset") {
		t.Errorf("transport failure: %v, want %s with the cause", err, CodeProviderError)
	}
}
