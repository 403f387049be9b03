package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// proxyenv runs the subcommands of the proxy environment checks:
//
//	serve TOKEN: an HTTP server on the world's own 127.0.0.1 answering
//	  TOKEN; prints "listening ADDR", then serves until killed.
//	fetch URL: a GET as curl makes it, honouring http_proxy/HTTP_PROXY
//	  and no_proxy/NO_PROXY and nothing else (Go's own client never
//	  proxies a loopback address, whatever the environment says, so it
//	  could not tell whether NO_PROXY is set); prints "direct" or "proxy
//	  URL", then "status N BODY" or "error ...".
func proxyenv(sub string, args []string) {
	switch sub {
	case "serve":
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Printf("setup-failed %v\n", err)
			os.Exit(1)
		}
		fmt.Printf("listening %s\n", l.Addr())
		http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, args[0]) }))
	case "fetch":
		fetch(args[0])
	}
}

func fetch(target string) {
	u, err := url.Parse(target)
	if err != nil {
		fmt.Printf("error %v\n", err)
		return
	}
	proxy := curlProxy(u.Hostname())
	if proxy != nil {
		fmt.Printf("proxy %s\n", proxy)
	} else {
		fmt.Println("direct")
	}
	getVia(target, proxy)
}

// getVia GETs target through proxy (nil: directly) and prints "status N
// BODY" or "error ...".
func getVia(target string, proxy *url.URL) {
	tr := &http.Transport{}
	if proxy != nil {
		tr.Proxy = http.ProxyURL(proxy)
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: tr}
	resp, err := c.Get(target)
	if err != nil {
		fmt.Printf("error %v\n", oneLine(err))
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	fmt.Printf("status %d %q\n", resp.StatusCode, b)
}

// curlProxy is curl's choice for an http:// URL to host: none when
// no_proxy (or NO_PROXY) lists the host or a domain it is in, else
// http_proxy (curl ignores the upper-case HTTP_PROXY; the probe falls
// back to it, as most other clients read either).
func curlProxy(host string) *url.URL {
	np := os.Getenv("no_proxy")
	if np == "" {
		np = os.Getenv("NO_PROXY")
	}
	for _, e := range strings.Split(np, ",") {
		e = strings.TrimPrefix(strings.TrimSpace(e), ".")
		if e == "*" || (e != "" && (host == e || strings.HasSuffix(host, "."+e))) {
			return nil
		}
	}
	p := os.Getenv("http_proxy")
	if p == "" {
		p = os.Getenv("HTTP_PROXY")
	}
	if p == "" {
		return nil
	}
	u, err := url.Parse(p)
	if err != nil {
		return nil
	}
	return u
}
