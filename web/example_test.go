package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/dsh-dev/dsh/netpolicy"
	"github.com/dsh-dev/dsh/web"
)

func ExampleFetcher_Fetch() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<h1>Hello</h1><script>track()</script><p>from <b>loopback</b></p>`)
	}))
	defer srv.Close()

	// The web default policy refuses loopback; this example admits its
	// own server by IP:port.
	c := netpolicy.WebDefault()
	c.Allow = []string{srv.Listener.Addr().String()}
	p, err := netpolicy.New(c)
	if err != nil {
		panic(err)
	}
	f, err := web.NewFetcher(&web.FetchOptions{Dialer: &netpolicy.Dialer{Policy: p}})
	if err != nil {
		panic(err)
	}
	defer f.Close()

	res, err := f.Fetch(context.Background(), srv.URL)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.StatusCode, res.Kind)
	fmt.Println(web.Body(res))

	// Without the allow entry the same URL is refused before any connect.
	strict, _ := web.NewFetcher(nil)
	_, err = strict.Fetch(context.Background(), srv.URL)
	fmt.Println(web.CodeOf(err))
	// Output:
	// 200 html
	// # Hello
	//
	// from **loopback**
	// NET_DENIED
}

func ExampleRegistry_Select() {
	reg, _ := web.NewRegistry(
		&web.SearXNG{BaseURL: "http://searxng:8080"},
		&web.Brave{LookupEnv: func(string) (string, bool) { return "", false }}, // no key
	)
	p, err := reg.Select("")
	fmt.Println(p.ID(), err)
	_, err = reg.Select("brave")
	fmt.Println(web.CodeOf(err))
	// Output:
	// searxng <nil>
	// WEB_PROVIDER_CONFIGURED_UNAVAILABLE
}
