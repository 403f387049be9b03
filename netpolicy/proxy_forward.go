package netpolicy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// hopHeaders are the hop-by-hop headers of RFC 9110 section 7.6.1 plus
// the proxy ones clients send: they describe one connection, so a proxy
// never forwards them.
var hopHeaders = []string{
	"Connection",
	"Proxy-Connection",
	"Keep-Alive",
	"Proxy-Authenticate",
	"Proxy-Authorization",
	"Te",
	"Trailer",
	"Transfer-Encoding",
	"Upgrade",
}

// removeHopHeaders deletes the hop-by-hop headers of h, including every
// header the Connection header names.
func removeHopHeaders(h http.Header) {
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

func (p *Proxy) newTransport(w *world) *http.Transport {
	return &http.Transport{
		// Never an ambient proxy: this is the proxy.
		Proxy: nil,
		DialContext: func(ctx context.Context, network, address string) (net.Conn, error) {
			c, _, err := p.dialTarget(ctx, w, address)
			return c, err
		},
		MaxIdleConns:           256,
		MaxIdleConnsPerHost:    64,
		IdleConnTimeout:        90 * time.Second,
		ResponseHeaderTimeout:  p.opts.IdleTimeout,
		MaxResponseHeaderBytes: int64(p.opts.MaxHeaderBytes),
		// Pass bodies through as the upstream encoded them.
		DisableCompression:    true,
		ExpectContinueTimeout: time.Second,
	}
}

// forward serves one absolute-form request and reports whether the client
// connection may carry another.
func (cc *clientConn) forward(req *http.Request) bool {
	p := cc.p
	defer req.Body.Close()
	rec := cc.newRecord(req.Method)

	u, t, err := cc.forwardTarget(req)
	if err != nil {
		rec.Verdict, rec.Reason, rec.Error = verdictDenyName, reasonMalformed, err.Error()
		rec.Status = http.StatusBadRequest
		cc.writeError(rec.Status, rec.Reason, "dsh proxy: "+err.Error()+"\n")
		p.finish(rec, cc.w)
		return false
	}
	rec.Host, rec.Port, rec.URL = t.Host, t.Port, u.String()
	target := t.HostPort()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// The request target decides where the request goes and what Host
	// the upstream sees; the client's Host header is ignored.
	out := req.Clone(ctx)
	out.RequestURI = ""
	out.Host = u.Host // normalised by ParseURL
	dial := *u
	dial.Host = target // with the port, as the transport dials it
	out.URL = &dial
	removeHopHeaders(out.Header)
	out.Close = false
	var upBytes atomic.Int64
	if req.Body != nil && req.Body != http.NoBody {
		out.Body = &countingReader{r: req.Body, n: &upBytes}
	}
	out = out.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		// Expect: 100-continue goes to the upstream (the policy is
		// judged at the dial, before it), and its 100 comes back.
		Got100Continue: func() {
			io.WriteString(cc.c, "HTTP/1.1 100 Continue\r\n\r\n")
		},
		GotConn: func(ci httptrace.GotConnInfo) {
			// Pooled or new, the connection was judged when dialled;
			// record the Policy's judgement of where it goes.
			if ta, ok := ci.Conn.RemoteAddr().(*net.TCPAddr); ok {
				ap := ta.AddrPort()
				rec.setDecision(cc.w.d.policy().Decide(t.Host, ap.Addr().Unmap(), ap.Port()))
			}
		},
	}))

	resp, err := cc.w.tr.RoundTrip(out)
	rec.BytesUp = upBytes.Load()
	if err != nil {
		cc.answerDialError(rec, err, target)
		p.finish(rec, cc.w)
		return false
	}
	defer resp.Body.Close()
	rec.Status = resp.StatusCode

	keep := !req.Close && req.ProtoAtLeast(1, 1) && !p.closing.Load()
	removeHopHeaders(resp.Header)
	resp.Proto, resp.ProtoMajor, resp.ProtoMinor = "HTTP/1.1", 1, 1
	if !req.ProtoAtLeast(1, 1) {
		// An HTTP/1.0 client reads the body up to the close.
		resp.TransferEncoding = nil
	}
	if resp.ContentLength < 0 && len(resp.TransferEncoding) == 0 {
		keep = false
	}
	resp.Close = !keep
	var downBytes atomic.Int64
	resp.Body = &countingReader{r: resp.Body, n: &downBytes}
	if m := p.opts.Metrics; m != nil {
		defer func() {
			up, down := m.byteCounters(cc.w.name)
			up.Add(float64(rec.BytesUp))
			down.Add(float64(rec.BytesDown))
		}()
	}

	bw := bufioWriters.Get().(*bufio.Writer)
	bw.Reset(cc.c)
	err = resp.Write(bw)
	if err == nil {
		err = bw.Flush()
	}
	bw.Reset(nil)
	bufioWriters.Put(bw)
	rec.BytesUp = upBytes.Load()
	rec.BytesDown = downBytes.Load()
	if err != nil {
		rec.Error = err.Error()
		keep = false
	}
	p.finish(rec, cc.w)
	return keep
}

// forwardTarget checks that req is absolute-form http and returns its URL
// and normalised target.
func (cc *clientConn) forwardTarget(req *http.Request) (*url.URL, Target, error) {
	uri := req.RequestURI
	if !strings.Contains(uri, "://") {
		return nil, Target{}, fmt.Errorf("request target %q is not an absolute URL: this is a forward proxy, send http://host/path (or CONNECT host:port for https)", uri)
	}
	u, t, err := ParseURL(uri)
	if err != nil {
		return nil, Target{}, fmt.Errorf("request target %q: %w", uri, err)
	}
	if u.Scheme != "http" {
		return nil, Target{}, fmt.Errorf("request target %q: only http:// is forwarded; use CONNECT for %s", uri, u.Scheme)
	}
	return u, t, nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.ReadCloser
	n *atomic.Int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n.Add(int64(n))
	return n, err
}

func (c *countingReader) Close() error { return c.r.Close() }
