package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/dsh-dev/dsh/netpolicy/proxy"
)

// egressEntry is one destination of the --json egress array: what the
// world's proxy decided for it, under which rule, and how often.
type egressEntry struct {
	Destination string `json:"destination"`
	Verdict     string `json:"verdict"`
	Rule        string `json:"rule,omitempty"`
	Reason      string `json:"reason,omitempty"`
	Count       int    `json:"count"`
}

// egressCollector is the audit writer dsh run gives the world's proxy: it
// decodes the proxy's JSON audit lines (proxy.AuditRecord) into a count
// per destination and verdict, and passes the lines on to tee (--audit,
// proxy.audit) when set.
type egressCollector struct {
	tee io.Writer

	mu      sync.Mutex // guards the fields below
	partial []byte
	entries []*egressEntry
	index   map[string]*egressEntry
	teeErr  error
}

func newEgressCollector(tee io.Writer) *egressCollector {
	return &egressCollector{tee: tee, index: map[string]*egressEntry{}}
}

func (c *egressCollector) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tee != nil && c.teeErr == nil {
		// A failing audit file must not fail the proxy; it is said once
		// at exit.
		_, c.teeErr = c.tee.Write(p)
	}
	c.partial = append(c.partial, p...)
	for {
		i := bytes.IndexByte(c.partial, '\n')
		if i < 0 {
			break
		}
		c.add(c.partial[:i])
		c.partial = c.partial[i+1:]
	}
	return len(p), nil
}

func (c *egressCollector) add(line []byte) {
	var r proxy.AuditRecord
	if err := json.Unmarshal(line, &r); err != nil || r.Verdict == "" {
		return
	}
	dest := r.Addr
	if r.Host != "" {
		dest = r.Host
		if r.Port != 0 {
			dest = net.JoinHostPort(r.Host, strconv.Itoa(int(r.Port)))
		}
	}
	if dest == "" {
		dest = "(unknown)"
	}
	key := r.Verdict + "\x00" + dest + "\x00" + r.Rule
	e := c.index[key]
	if e == nil {
		e = &egressEntry{Destination: dest, Verdict: r.Verdict, Rule: r.Rule, Reason: r.Reason}
		c.index[key] = e
		c.entries = append(c.entries, e)
	}
	e.Count++
}

// egress is every destination seen so far, in order of first sight.
func (c *egressCollector) egress() []egressEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]egressEntry, len(c.entries))
	for i, e := range c.entries {
		out[i] = *e
	}
	return out
}

// summarize writes one line per refused destination, with the flag that
// allows it where an allow entry can (a default or special-range
// denial; an explicit deny entry wins over any allow), and says once if
// the audit copy failed.
func (c *egressCollector) summarize(w io.Writer) {
	for _, e := range c.egress() {
		if e.Verdict != "deny" {
			continue
		}
		line := fmt.Sprintf("dsh: egress refused %d×: %s", e.Count, e.Destination)
		if e.Rule != "" {
			line += " (" + e.Rule + ")"
		}
		if strings.HasPrefix(e.Rule, "default") || strings.HasPrefix(e.Rule, "special") {
			line += " — allow with --allow " + e.Destination
		}
		fmt.Fprintln(w, line)
	}
	c.mu.Lock()
	err := c.teeErr
	c.mu.Unlock()
	if err != nil {
		fmt.Fprintf(w, "dsh: warning: writing the egress audit log: %v\n", err)
	}
}
