package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"

	"go.yaml.in/yaml/v3"

	"github.com/dsh-dev/dsh/netpolicy"
)

// PolicyKeys are the keys of a policy file, which are those of a policy
// section of the configuration (network, web.policy).
var PolicyKeys = []string{"default", "ports", "allow", "deny"}

// ParsePolicy reads a standalone policy file (dsh --policy FILE) with the
// checks of the configuration's policy sections: every problem at once,
// each with its key path (allow[2]), unknown keys with the nearest known
// one. A policy file must say its default. The error is an Errors, or a
// plain error when data is not one YAML mapping.
func ParsePolicy(data []byte) (netpolicy.Config, error) {
	var c netpolicy.Config
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var raw any
	if err := dec.Decode(&raw); err != nil {
		if errors.Is(err, io.EOF) {
			return c, errors.New(`empty; a policy file needs at least "default: deny" or "default: public"`)
		}
		return c, fmt.Errorf("not valid YAML: %w", err)
	}
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return c, errors.New("holds more than one YAML document; keep one")
	}
	if raw == nil {
		return c, errors.New(`empty; a policy file needs at least "default: deny" or "default: public"`)
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return c, errors.New("is not a mapping of the keys default, ports, allow, deny")
	}
	var errs Errors
	bad := func(key, format string, args ...any) {
		errs = append(errs, &KeyError{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	known := map[string]bool{}
	for _, k := range PolicyKeys {
		known[k] = true
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !known[k] {
			bad(k, "is not a policy key (default, ports, allow, deny)%s", suggest(k, known, nil))
		}
	}
	switch d := m["default"].(type) {
	case nil:
		bad("default", "missing; set deny or public")
	case string:
		c.Default = d
	default:
		bad("default", "%v is not a policy default; use deny or public", d)
	}
	if v, ok := m["ports"]; ok && v != nil {
		l, ok := v.([]any)
		if !ok {
			bad("ports", "is not a list of ports (write ports: [80, 443])")
		}
		for i, e := range l {
			if n, ok := e.(int); ok {
				c.Ports = append(c.Ports, n)
			} else {
				bad(fmt.Sprintf("ports[%d]", i), "%s is not a port (1-65535)", scalar(e))
			}
		}
	}
	entries := func(key string, out *[]string) {
		v, ok := m[key]
		if !ok || v == nil {
			return
		}
		l, ok := v.([]any)
		if !ok {
			bad(key, "is not a list of entries (write %s: [example.org:443])", key)
			return
		}
		for i, e := range l {
			if s, ok := e.(string); ok {
				*out = append(*out, s)
			} else {
				bad(fmt.Sprintf("%s[%d]", key, i), "%s is not an entry (host, host:port, IP, CIDR); quote it", scalar(e))
			}
		}
	}
	entries("allow", &c.Allow)
	entries("deny", &c.Deny)
	pc := c
	if pc.Default == "" {
		pc.Default = "deny" // a missing or mistyped default is reported above
	}
	validatePolicy("", pc, bad)
	if len(errs) > 0 {
		return c, errs
	}
	return c, nil
}
