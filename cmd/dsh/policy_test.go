package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// policyCheck runs dsh policy check in-process with no config file in
// reach and returns its output and exit status.
func policyCheck(t *testing.T, args ...string) (string, int) {
	t.Helper()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("DSH_CONFIG", "")
	t.Chdir(t.TempDir())
	out, err := runDsh(t, append([]string{"policy", "check"}, args...)...)
	code := 0
	if err != nil {
		var ee *exitError
		if asExitError(err, &ee) {
			code = ee.code
			if ee.msg != "" {
				out += ee.msg
			}
		} else {
			code, out = 2, out+err.Error()
		}
	}
	return out, code
}

func jsonLines(t *testing.T, out string) []checkResult {
	t.Helper()
	var rs []checkResult
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r checkResult
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %q is not JSON: %v", line, err)
		}
		rs = append(rs, r)
	}
	return rs
}

func TestPolicyCheckAllAllowedExitsZero(t *testing.T) {
	out, code := policyCheck(t, "--for", "fetch", "8.8.8.8:443", "https://[2606:4700::1111]/", "https://pinned.test/x", "--resolve", "pinned.test=1.1.1.1")
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", code, out)
	}
	for _, w := range []string{"allow 8.8.8.8:443", "allow https://pinned.test/x", "addresses: 1.1.1.1", "rule:      default:public"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

func TestPolicyCheckDeniedExitsOneWithJSON(t *testing.T) {
	out, code := policyCheck(t, "--for", "fetch", "--json", "http://127.1/", "https://mixed.test/", "8.8.8.8:22",
		"--resolve", "mixed.test=1.1.1.1,10.0.0.1")
	if code != 1 {
		t.Fatalf("exit %d, want 1:\n%s", code, out)
	}
	rs := jsonLines(t, out)
	if len(rs) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(rs), out)
	}
	want := []struct{ target, rule, host string }{
		{"http://127.1/", "special:127.0.0.0/8", "127.0.0.1"},
		{"https://mixed.test/", "special:10.0.0.0/8", "mixed.test"},
		{"8.8.8.8:22", "default:public", "8.8.8.8"},
	}
	for i, w := range want {
		r := rs[i]
		if r.Target != w.target || r.Verdict != "deny" || r.Rule != w.rule || r.Host != w.host || r.Reason == "" {
			t.Errorf("line %d = %+v; want target %s deny rule %s host %s", i, r, w.target, w.rule, w.host)
		}
	}
	if got := strings.Join(rs[1].Addresses, ","); got != "1.1.1.1,10.0.0.1" {
		t.Errorf("mixed.test addresses = %s, want both pinned", got)
	}
}

func TestPolicyCheckInvalidTargetExitsTwo(t *testing.T) {
	out, code := policyCheck(t, "--for", "fetch", "--json", "8.8.8.8:443", "http://user@example.com/", "http://%31%32%37.0.0.1/")
	if code != 2 {
		t.Fatalf("exit %d, want 2:\n%s", code, out)
	}
	rs := jsonLines(t, out)
	if len(rs) != 3 || rs[0].Verdict != "allow" {
		t.Fatalf("output:\n%s", out)
	}
	for _, r := range rs[1:] {
		if r.Verdict != "deny" || !strings.HasPrefix(r.Reason, "invalid: ") || r.Rule != "invalid" {
			t.Errorf("invalid target printed as %+v", r)
		}
	}
}

func TestPolicyCheckPolicyFileAndAllowFlag(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	os.WriteFile(file, []byte("default: deny\nallow:\n  - \"*.corp.test:8443\"\ndeny:\n  - bad.corp.test\n"), 0o600)
	out, code := policyCheck(t, "--json", "--policy", file, "--allow", "10.0.0.0/8",
		"--resolve", "a.corp.test=93.184.215.14", "--resolve", "bad.corp.test=93.184.215.14", "--resolve", "db.corp.test=10.1.1.1",
		"https://a.corp.test:8443/", "https://bad.corp.test:8443/", "db.corp.test:5432", "10.1.1.1:5432", "8.8.8.8:443")
	if code != 1 {
		t.Fatalf("exit %d, want 1:\n%s", code, out)
	}
	rs := jsonLines(t, out)
	want := []struct{ verdict, rule string }{
		{"allow", "allow:*.corp.test:8443"},
		{"deny", "deny:bad.corp.test"},
		// A CIDR entry allows addresses written as addresses; the name is
		// not resolved (not even through a pin) to see where it lands.
		{"deny", "name-not-resolved"},
		{"allow", "allow:10.0.0.0/8"},
		{"deny", "default:deny"},
	}
	if len(rs) != len(want) {
		t.Fatalf("output:\n%s", out)
	}
	for i, w := range want {
		if rs[i].Verdict != w.verdict || rs[i].Rule != w.rule {
			t.Errorf("%s = %s %s; want %s %s", rs[i].Target, rs[i].Verdict, rs[i].Rule, w.verdict, w.rule)
		}
	}
	if r := rs[2]; len(r.Addresses) != 0 || !strings.Contains(r.Reason, "--allow db.corp.test:5432") {
		t.Errorf("db.corp.test:5432 = addresses %v, reason %q; want no addresses and the fix --allow db.corp.test:5432", r.Addresses, r.Reason)
	}
}

func TestPolicyCheckBadPolicyFile(t *testing.T) {
	dir := t.TempDir()
	for name, tt := range map[string]struct{ body, want string }{
		"unknown key":   {"default: deny\nallows: [x]\n", `allows: is not a policy key (default, ports, allow, deny); did you mean "allow"?`},
		"bad entry":     {"default: deny\nallow: [\"10.0.0.1/8\"]\n", "did you mean 10.0.0.0/8"},
		"no default":    {"allow: [example.org]\n", "default: missing"},
		"empty":         {"", "empty"},
		"two documents": {"default: deny\n---\ndefault: public\n", "more than one YAML document"},
		"bad default":   {"default: open\n", `default: "open" is not a policy default`},
	} {
		file := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".yaml")
		os.WriteFile(file, []byte(tt.body), 0o600)
		out, code := policyCheck(t, "--policy", file, "8.8.8.8:443")
		if code != 2 || !strings.Contains(out, tt.want) {
			t.Errorf("%s: exit %d, output %q; want exit 2 mentioning %q", name, code, out, tt.want)
		}
	}
	if out, code := policyCheck(t, "--policy", filepath.Join(dir, "missing.yaml"), "8.8.8.8:443"); code != 2 || !strings.Contains(out, "missing.yaml") {
		t.Errorf("missing file: exit %d, %q", code, out)
	}
}

func TestPolicyCheckUsesConfiguredWebPolicy(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "dsh.yaml")
	os.WriteFile(file, []byte("web:\n  policy:\n    default: deny\n    allow: [\"1.1.1.1:443\"]\n"), 0o600)
	out, code := policyCheck(t, "--for", "fetch", "--config", file, "--json", "1.1.1.1:443", "8.8.8.8:443")
	if code != 1 {
		t.Fatalf("exit %d, want 1:\n%s", code, out)
	}
	rs := jsonLines(t, out)
	if rs[0].Verdict != "allow" || rs[1].Verdict != "deny" || rs[1].Rule != "default:deny" {
		t.Errorf("configured policy not applied:\n%s", out)
	}
}

func TestPolicyCheckUsage(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--resolve", "nohost", "8.8.8.8"},
		{"--resolve", "x.test=not-an-ip", "x.test"},
		{"--allow", "127.1", "8.8.8.8"},
		{"--bogus-flag", "8.8.8.8"},
	} {
		if out, code := policyCheck(t, args...); code != 2 {
			t.Errorf("policy check %q: exit %d, want 2:\n%s", args, code, out)
		}
	}
}

// Internationalised names are judged as net/http dials them: entries,
// pins and targets typed in Unicode meet as xn-- names.
func TestPolicyCheckInternationalisedNames(t *testing.T) {
	file := filepath.Join(t.TempDir(), "p.yaml")
	os.WriteFile(file, []byte("default: deny\nallow: [\"bücher.example:443\"]\n"), 0o600)
	out, code := policyCheck(t, "--json", "--policy", file,
		"--resolve", "Bücher.example=93.184.215.14", "https://Bücher.example/x", "bücher.example:443")
	if code != 0 {
		t.Fatalf("exit %d, output %s", code, out)
	}
	for _, r := range jsonLines(t, out) {
		if r.Verdict != "allow" || r.Host != "xn--bcher-kva.example" || r.Rule != "allow:xn--bcher-kva.example:443" {
			t.Errorf("%s: %+v; want allowed as xn--bcher-kva.example", r.Target, r)
		}
	}
	out, code = policyCheck(t, "--json", "https://a\u200db.example/")
	if rs := jsonLines(t, out); code != 2 || len(rs) != 1 || !strings.Contains(rs[0].Reason, "not a valid internationalised domain name") {
		t.Errorf("an invalid internationalised name: exit %d, %s; want exit 2 saying why", code, out)
	}
	out, code = policyCheck(t, "--allow", "xn--ü.example", "example.com")
	if code != 2 || !strings.Contains(out, `entry "xn--ü.example"`) {
		t.Errorf("an invalid internationalised allow entry: exit %d, %s; want exit 2 naming the entry", code, out)
	}
}
