package proxy

import (
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/dsh-dev/dsh/netpolicy"
)

// AuditRecord is one line of the proxy's audit log: one CONNECT tunnel or
// one forwarded request, or a connection refused before either. Field
// names are stable; tools parse them.
type AuditRecord struct {
	// Time is when the connection or request started.
	Time time.Time `json:"time"`
	// World is the execution world the client belongs to.
	World string `json:"world"`
	// Client is the client's address (host:port, or unix:PATH).
	Client string `json:"client"`
	// Method is CONNECT or the forwarded request's method; empty when no
	// request could be read.
	Method string `json:"method,omitempty"`
	// Host and Port are the requested destination, as normalised for
	// dialling. URL is the forwarded request's absolute URL without its
	// query (which often carries credentials).
	Host string `json:"host,omitempty"`
	Port uint16 `json:"port,omitempty"`
	URL  string `json:"url,omitempty"`
	// Addr is the address connected to (or the one that was denied).
	Addr string `json:"addr,omitempty"`
	// Verdict is allow or deny; Reason and Rule come from the Policy's
	// Decision, or from the proxy (malformed request, proxy itself,
	// connection limit, upstream unreachable...).
	Verdict string `json:"verdict"`
	Reason  string `json:"reason,omitempty"`
	Rule    string `json:"rule,omitempty"`
	// Status is the HTTP status the proxy or upstream answered.
	Status int `json:"status,omitempty"`
	// BytesUp counts bytes from the client to the upstream (tunnel bytes,
	// or the request body); BytesDown the other way.
	BytesUp   int64 `json:"bytes_up"`
	BytesDown int64 `json:"bytes_down"`
	// DurationMS is how long the tunnel or request lasted.
	DurationMS float64 `json:"duration_ms"`
	// Error says why a connection or request failed, if it did.
	Error string `json:"error,omitempty"`

	// metricReason is the reason label of the decision metric: the
	// Policy's stage, or the proxy's own short reason, so the label set
	// stays small however long Reason's sentence is.
	metricReason string
}

func (r *AuditRecord) setDecision(d netpolicy.Decision) {
	r.Verdict = d.Verdict.String()
	r.Reason = d.Reason
	r.Rule = d.Rule
	r.metricReason = d.Stage.String()
	if d.Rule == ruleSelf {
		r.metricReason = reasonSelf
	}
	if d.Addr.IsValid() {
		r.Addr = d.Addr.String()
	}
}

// auditLog writes AuditRecords as JSON lines, one Write per line.
type auditLog struct {
	log *slog.Logger
	mu  sync.Mutex // guards w and buf
	w   io.Writer
	buf []byte
}

func newAuditLog(w io.Writer, log *slog.Logger) *auditLog {
	if w == nil {
		return nil
	}
	return &auditLog{w: w, log: log}
}

func (a *auditLog) write(r *AuditRecord) {
	if a == nil {
		return
	}
	b, err := json.Marshal(r)
	if err != nil {
		a.log.Error("proxy audit: encoding record", "err", err)
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.buf = append(append(a.buf[:0], b...), '\n')
	if _, err := a.w.Write(a.buf); err != nil {
		a.log.Error("proxy audit: writing record", "err", err)
	}
}
