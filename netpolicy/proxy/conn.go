package proxy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// States of a client connection, for Shutdown: idle connections (waiting
// for a request) are closed at once, active ones finish their request.
const (
	stateIdle int32 = iota
	stateActive
	stateTunnel
	stateClosed
)

// clientConn is one connection from a client of the proxy.
type clientConn struct {
	p     *Proxy
	c     net.Conn
	w     *world
	state atomic.Int32
	br    *bufio.Reader
	lr    io.LimitedReader // under br: caps header bytes

	mu sync.Mutex // guards up
	up net.Conn   // the tunnel's upstream, for forceClose
}

func (cc *clientConn) serve() {
	p := cc.p
	defer p.untrackConn(cc)
	defer cc.c.Close()
	defer func() {
		if r := recover(); r != nil {
			// A bug serving one client must not take the proxy (or
			// dsh) down with it.
			p.log.Error("proxy: panic serving connection", "client", cc.client(), "panic", r)
		}
	}()

	open := cc.w.open.Add(1)
	defer cc.w.open.Add(-1)
	if p.opts.Metrics != nil {
		g := p.opts.Metrics.open.WithLabelValues(cc.w.name)
		g.Inc()
		defer g.Dec()
	}
	if open > int64(p.opts.MaxConnsPerWorld) {
		rec := cc.newRecord("")
		rec.Verdict, rec.Reason, rec.Status = verdictDenyName, "connection limit", http.StatusServiceUnavailable
		cc.writeError(http.StatusServiceUnavailable, rec.Reason, fmt.Sprintf(
			"dsh proxy: world %q already has %d connections open (limit %d); close some and retry\n",
			cc.w.name, open-1, p.opts.MaxConnsPerWorld))
		p.finish(rec)
		return
	}

	cc.br = bufioReaders.Get().(*bufio.Reader)
	cc.lr.R = cc.c
	cc.br.Reset(&cc.lr)
	defer cc.releaseReader()

	for {
		cc.state.Store(stateIdle)
		// Checked after publishing stateIdle: either Shutdown sees us idle
		// and closes the connection, or we see it closing here.
		if p.closing.Load() {
			return
		}
		cc.c.SetReadDeadline(time.Now().Add(p.opts.HeaderTimeout))
		// Headers may use MaxHeaderBytes, plus the reader's slack as in
		// net/http, so a limit hit means the headers were too large.
		cc.lr.N = int64(p.opts.MaxHeaderBytes) + 4096
		if _, err := cc.br.Peek(1); err != nil {
			return // closed, idle too long, or Shutdown
		}
		if !cc.state.CompareAndSwap(stateIdle, stateActive) {
			return
		}
		req, err := http.ReadRequest(cc.br)
		if err != nil {
			cc.badRequest(err)
			return
		}
		if req.ProtoMajor != 1 {
			rec := cc.newRecord(req.Method)
			rec.Verdict, rec.Reason, rec.Status = verdictDenyName, reasonMalformed, http.StatusHTTPVersionNotSupported
			rec.Error = "unsupported protocol " + req.Proto
			cc.writeError(rec.Status, rec.Reason, "dsh proxy: "+rec.Error+"; speak HTTP/1.1 to the proxy\n")
			p.finish(rec)
			return
		}
		cc.c.SetReadDeadline(time.Time{})
		cc.lr.N = math.MaxInt64 // bodies are not capped, only headers
		if req.Method == http.MethodConnect {
			cc.connect(req)
			return
		}
		if !cc.forward(req) {
			return
		}
	}
}

func (cc *clientConn) releaseReader() {
	if cc.br != nil {
		cc.br.Reset(nil)
		bufioReaders.Put(cc.br)
		cc.br = nil
	}
}

// client is the client's address for audit records.
func (cc *clientConn) client() string {
	a := cc.c.RemoteAddr()
	if a == nil || a.String() == "" || a.String() == "@" {
		if la := cc.c.LocalAddr(); la != nil && la.Network() == "unix" {
			return "unix:" + la.String()
		}
		return "unknown"
	}
	return a.String()
}

// badRequest answers a request that could not be read.
func (cc *clientConn) badRequest(err error) {
	rec := cc.newRecord("")
	rec.Verdict, rec.Status = verdictDenyName, http.StatusBadRequest
	if cc.lr.N <= 0 {
		rec.Status = http.StatusRequestHeaderFieldsTooLarge
		rec.Reason = "request headers too large"
		cc.writeError(rec.Status, rec.Reason, fmt.Sprintf(
			"dsh proxy: request headers exceed %d bytes\n", cc.p.opts.MaxHeaderBytes))
	} else {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			rec.Reason, rec.Status = "request headers timed out", http.StatusRequestTimeout
		} else {
			rec.Reason = "malformed request"
		}
		rec.Error = err.Error()
		cc.writeError(rec.Status, rec.Reason, "dsh proxy: "+rec.Reason+": "+err.Error()+"\n")
	}
	cc.p.finish(rec)
}

// writeError answers with status, a short plain-text body and, for
// denials, X-Dsh-Deny-Reason, then the connection is to be closed.
func (cc *clientConn) writeError(status int, reason, body string) {
	var b strings.Builder
	b.WriteString("HTTP/1.1 ")
	b.WriteString(strconv.Itoa(status))
	b.WriteByte(' ')
	b.WriteString(http.StatusText(status))
	b.WriteString("\r\nContent-Type: text/plain; charset=utf-8\r\n")
	if reason != "" {
		b.WriteString("X-Dsh-Deny-Reason: ")
		b.WriteString(headerSafe(reason))
		b.WriteString("\r\n")
	}
	b.WriteString("Content-Length: ")
	b.WriteString(strconv.Itoa(len(body)))
	b.WriteString("\r\nConnection: close\r\n\r\n")
	b.WriteString(body)
	cc.c.SetWriteDeadline(time.Now().Add(cc.p.opts.HeaderTimeout))
	io.WriteString(cc.c, b.String())
}

// headerSafe makes s usable as a header value: no control characters.
func headerSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// forceClose closes the connection and its tunnel's upstream, if any.
func (cc *clientConn) forceClose() {
	cc.state.Store(stateClosed)
	cc.c.Close()
	cc.mu.Lock()
	if cc.up != nil {
		cc.up.Close()
	}
	cc.mu.Unlock()
}

func (cc *clientConn) setUpstream(up net.Conn) bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.state.Load() == stateClosed {
		return false
	}
	cc.up = up
	return true
}

// newRecord starts the audit record of a request on this connection.
func (cc *clientConn) newRecord(method string) *AuditRecord {
	return &AuditRecord{Time: time.Now(), World: cc.w.name, Client: cc.client(), Method: method}
}

// finish completes rec: its duration, the decision metric, the audit line.
func (p *Proxy) finish(rec *AuditRecord) {
	rec.DurationMS = float64(time.Since(rec.Time).Microseconds()) / 1000
	if rec.Verdict == "" {
		rec.Verdict = verdictDenyName
	}
	reason := rec.metricReason
	if reason == "" {
		reason = rec.Reason
	}
	p.opts.Metrics.decision(rec.World, rec.Verdict, reason)
	p.audit.write(rec)
}
