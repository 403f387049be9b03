package main

import (
	"strings"
	"testing"
)

// The collector counts the proxy's audit lines per destination, verdict
// and rule, whatever the Write boundaries, passes them on to the audit
// copy untouched, and summarizes the refusals with the --allow that
// admits them where one can.
func TestEgressCollector(t *testing.T) {
	lines := `{"verdict":"deny","host":"pypi.org","port":443,"rule":"default:deny"}
{"verdict":"deny","host":"pypi.org","port":443,"rule":"default:deny"}
{"verdict":"allow","host":"proxy.golang.org","port":443,"rule":"allow:proxy.golang.org"}
{"verdict":"deny","host":"evil.example","port":80,"rule":"deny:evil.example"}
not json
`
	var tee strings.Builder
	c := newEgressCollector(&tee)
	for i := 0; i < len(lines); i += 7 { // lines split anywhere
		c.Write([]byte(lines[i:min(i+7, len(lines))]))
	}
	if tee.String() != lines {
		t.Errorf("audit copy = %q, want the lines as written", tee.String())
	}
	got := c.egress()
	want := []egressEntry{
		{Destination: "pypi.org:443", Verdict: "deny", Rule: "default:deny", Count: 2},
		{Destination: "proxy.golang.org:443", Verdict: "allow", Rule: "allow:proxy.golang.org", Count: 1},
		{Destination: "evil.example:80", Verdict: "deny", Rule: "deny:evil.example", Count: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("egress() = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("egress()[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
	var sum strings.Builder
	c.summarize(&sum)
	wantSum := "dsh: egress refused 2×: pypi.org:443 (default:deny) — allow with --allow pypi.org:443\n" +
		"dsh: egress refused 1×: evil.example:80 (deny:evil.example)\n"
	if sum.String() != wantSum {
		t.Errorf("summary:\n%s\nwant:\n%s", sum.String(), wantSum)
	}
}

func TestEnvEntry(t *testing.T) {
	lookup := func(k string) (string, bool) {
		if k == "SET" {
			return "host", true
		}
		return "", false
	}
	for in, want := range map[string]string{
		"K=V": "K=V", "K=": "K=", "K=a=b": "K=a=b", "SET": "SET=host", "UNSET": "",
	} {
		got, err := envEntry(in, lookup)
		if err != nil || got != want {
			t.Errorf("envEntry(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "=v", "A B=c"} {
		if _, err := envEntry(in, lookup); err == nil {
			t.Errorf("envEntry(%q) accepted", in)
		}
	}
}
