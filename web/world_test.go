package web_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/execworld/execworldtest"
	"github.com/dsh-dev/dsh/netpolicy"
	"github.com/dsh-dev/dsh/web"
)

// A fetch on a world's behalf dials through the world's Net, so the
// world's policy decides where it may go.
func TestFetchThroughAWorldsNet(t *testing.T) {
	var _ web.Dialer = (*execworld.Net)(nil)
	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "world-allowed") }))
	defer allowed.Close()
	denied := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { t.Error("the denied server was reached") }))
	defer denied.Close()
	pol := netpolicy.MustNew(netpolicy.Config{Allow: []string{strings.TrimPrefix(allowed.URL, "http://")}})
	w, _ := execworldtest.NewWorld(t, &execworld.Options{Net: pol})
	f, err := web.NewFetcher(&web.FetchOptions{Dialer: w.Net})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := f.Fetch(context.Background(), allowed.URL)
	if err != nil || res.Content != "world-allowed" {
		t.Fatalf("fetch of the server the world allows = %+v, %v", res, err)
	}
	if res, err := f.Fetch(context.Background(), denied.URL); err == nil {
		t.Fatalf("fetch of a server the world's policy denies = %+v; want an error", res)
	}
}
