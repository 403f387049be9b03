package proxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/dsh-dev/dsh/netpolicy"
)

// connect serves a CONNECT request: authority-form host:port only, judged
// and dialled through the world's Dialer, then a byte tunnel.
func (cc *clientConn) connect(req *http.Request) {
	p := cc.p
	rec := cc.newRecord(req.Method)
	t, err := parseAuthority(req.RequestURI)
	if err != nil {
		rec.Verdict, rec.Reason, rec.Error = verdictDenyName, "malformed request", err.Error()
		rec.Status = http.StatusBadRequest
		cc.writeError(rec.Status, rec.Reason, "dsh proxy: "+err.Error()+"\n")
		p.finish(rec)
		return
	}
	rec.Host, rec.Port = t.Host, t.Port
	target := t.HostPort()

	up, dec, err := p.dialTarget(context.Background(), cc.w, target)
	if err != nil {
		cc.answerDialError(rec, err, target)
		p.finish(rec)
		return
	}
	rec.setDecision(dec)
	if !cc.setUpstream(up) || !cc.state.CompareAndSwap(stateActive, stateTunnel) {
		up.Close()
		rec.Error = "proxy shut down"
		p.finish(rec)
		return
	}
	rec.Status = http.StatusOK
	cc.c.SetWriteDeadline(time.Now().Add(p.opts.HeaderTimeout))
	if _, err := io.WriteString(cc.c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		up.Close()
		rec.Error = err.Error()
		p.finish(rec)
		return
	}
	cc.c.SetWriteDeadline(time.Time{})

	// Bytes the client sent right behind the request (a TLS ClientHello
	// sent without waiting for our 200) are in the header reader.
	if n := cc.br.Buffered(); n > 0 {
		b, _ := cc.br.Peek(n)
		if _, err := up.Write(b); err != nil {
			up.Close()
			rec.Error = err.Error()
			p.finish(rec)
			return
		}
		rec.BytesUp += int64(n)
	}
	cc.releaseReader()

	upN, downN, terr := cc.tunnel(up)
	rec.BytesUp += upN
	rec.BytesDown = downN
	if terr != nil {
		rec.Error = terr.Error()
	}
	p.finish(rec)
}

// parseAuthority checks the target of a CONNECT request: host:port and
// nothing else (no scheme, no path, no userinfo), normalised as the
// Dialer will dial it.
func parseAuthority(s string) (netpolicy.Target, error) {
	if s == "" || strings.ContainsAny(s, "/?#@") {
		return netpolicy.Target{}, fmt.Errorf("CONNECT needs a target of the form host:port, got %q", s)
	}
	t, err := netpolicy.ParseTarget(s)
	if err != nil {
		return netpolicy.Target{}, fmt.Errorf("CONNECT target: %w", err)
	}
	if t.Port == 0 {
		return netpolicy.Target{}, fmt.Errorf("CONNECT needs a target of the form host:port, got %q: no port", s)
	}
	return t, nil
}
