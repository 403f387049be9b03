package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dsh-dev/dsh/netpolicy"
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

// forward serves one absolute-form request and reports whether the client
// connection may carry another.
func (cc *clientConn) forward(req *http.Request) (keepAlive bool) {
	p := cc.p
	defer func() {
		if !keepAlive {
			// The connection closes: no point draining the rest of
			// a body the client may still be sending.
			cc.c.SetReadDeadline(time.Now())
		}
		req.Body.Close()
	}()
	rec := cc.newRecord(req.Method)

	u, t, err := cc.forwardTarget(req)
	if err != nil {
		rec.Verdict, rec.Reason, rec.Error = verdictDenyName, reasonMalformed, err.Error()
		rec.Status = http.StatusBadRequest
		cc.writeError(rec.Status, rec.Reason, "dsh proxy: "+err.Error()+"\n")
		p.finish(rec)
		return false
	}
	rec.Host, rec.Port = t.Host, t.Port
	// The audit keeps the path but not the query, where credentials and
	// tokens tend to travel.
	logged := *u
	logged.RawQuery, logged.ForceQuery, logged.Fragment, logged.RawFragment = "", false, "", ""
	rec.URL = logged.String()
	target := t.HostPort()

	// The request target decides where the request goes and what Host
	// the upstream sees; the client's Host header is ignored.
	out := &http.Request{
		Method:        req.Method,
		URL:           u,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        req.Header,
		Host:          u.Host, // normalised by ParseURL
		ContentLength: req.ContentLength,
		Body:          req.Body,
	}
	if len(req.TransferEncoding) > 0 {
		out.TransferEncoding = []string{"chunked"}
	}
	expect := strings.EqualFold(req.Header.Get("Expect"), "100-continue")
	removeHopHeaders(out.Header)
	out.Header.Del("Expect")
	if _, ok := out.Header["User-Agent"]; !ok {
		out.Header["User-Agent"] = []string{""} // Request.Write adds none
	}
	var upBytes atomic.Int64
	if req.Body != nil && req.Body != http.NoBody {
		out.Body = &countingReader{r: req.Body, n: &upBytes, conn: cc.c, idle: p.opts.IdleTimeout}
	}
	replayable := out.Body == nil || out.Body == http.NoBody

	resp, uc, err := cc.roundTrip(rec, out, target, expect, replayable)
	rec.BytesUp = upBytes.Load()
	if err != nil {
		cc.answerDialError(rec, err, target)
		p.finish(rec)
		return false
	}
	rec.Status = resp.StatusCode

	keep := !req.Close && req.ProtoAtLeast(1, 1) && !p.closing.Load()
	upKeep := !resp.Close
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
	resp.Body = &countingReader{r: resp.Body, n: &downBytes, conn: uc.c, idle: p.opts.IdleTimeout}
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
	// The upstream connection is reusable when its response was read to
	// the end and neither side asked to close.
	if err == nil && upKeep && resp.Body.Close() == nil && uc.br.Buffered() == 0 {
		uc.c.SetReadDeadline(time.Time{})
		cc.w.pool.put(target, uc)
	} else {
		uc.close()
	}
	p.finish(rec)
	return keep
}

// roundTrip sends out to target over a pooled or new upstream connection
// and reads the response head. A reused connection that the upstream
// closed while idle is retried once on a new one when the request can be
// sent again.
func (cc *clientConn) roundTrip(rec *AuditRecord, out *http.Request, target string, expect, replayable bool) (*http.Response, *upConn, error) {
	for attempt := 0; ; attempt++ {
		uc := cc.w.pool.get(target)
		reused := uc != nil
		if uc == nil {
			c, dec, err := cc.p.dialTarget(context.Background(), cc.w, target)
			if err != nil {
				return nil, nil, err
			}
			uc = newUpConn(c, dec)
		}
		rec.setDecision(uc.dec)
		if expect && attempt == 0 {
			// The policy has allowed the destination (the connection
			// exists): let the client send its body.
			io.WriteString(cc.c, "HTTP/1.1 100 Continue\r\n\r\n")
		}
		uc.c.SetDeadline(time.Now().Add(cc.p.opts.IdleTimeout))
		err := out.Write(uc.bw)
		if err == nil {
			err = uc.bw.Flush()
		}
		var resp *http.Response
		if err == nil {
			resp, err = readFinalResponse(uc.br, out)
		}
		if err == nil {
			uc.c.SetDeadline(time.Time{})
			return resp, uc, nil
		}
		uc.close()
		if !reused || !replayable || attempt > 0 {
			return nil, nil, err
		}
	}
}

// readFinalResponse reads the response to req, skipping interim 1xx
// responses (100 Continue is answered by the proxy itself).
func readFinalResponse(br *bufio.Reader, req *http.Request) (*http.Response, error) {
	for {
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode == http.StatusSwitchingProtocols {
			// Upgrade was stripped; an upstream that switches anyway
			// speaks something this proxy does not carry.
			resp.Body.Close()
			return nil, errors.New("upstream switched protocols without being asked")
		}
		if resp.StatusCode >= 200 {
			return resp, nil
		}
		resp.Body.Close()
	}
}

// forwardTarget checks that req is absolute-form http and returns its URL
// and normalised target.
func (cc *clientConn) forwardTarget(req *http.Request) (*url.URL, netpolicy.Target, error) {
	uri := req.RequestURI
	if !strings.Contains(uri, "://") {
		return nil, netpolicy.Target{}, fmt.Errorf("request target %q is not an absolute URL: this is a forward proxy, send http://host/path (or CONNECT host:port for https)", uri)
	}
	u, t, err := netpolicy.ParseURL(uri)
	if err != nil {
		return nil, netpolicy.Target{}, fmt.Errorf("request target %q: %w", uri, err)
	}
	if u.Scheme != "http" {
		return nil, netpolicy.Target{}, fmt.Errorf("request target %q: only http:// is forwarded; use CONNECT for %s", uri, u.Scheme)
	}
	return u, t, nil
}

// countingReader counts the bytes read through it and, when conn is set,
// gives every read idle time to wait for bytes on conn.
type countingReader struct {
	r    io.ReadCloser
	n    *atomic.Int64
	conn net.Conn
	idle time.Duration
}

func (c *countingReader) Read(b []byte) (int, error) {
	if c.conn != nil {
		c.conn.SetReadDeadline(time.Now().Add(c.idle))
	}
	n, err := c.r.Read(b)
	c.n.Add(int64(n))
	return n, err
}

func (c *countingReader) Close() error { return c.r.Close() }
