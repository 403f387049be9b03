package config

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/dsh-dev/dsh/sandbox"
)

// A Class says which values of a key a configuration file the user has
// not trusted (a project file: one a world could have written) may set.
// A value equal to the one the key would otherwise have changes nothing
// and is taken for every class; any other value must narrow
// confinement by the class's rule, or the file needs the user's trust
// (dsh trust FILE).
type Class struct {
	// Name identifies the class (dsh trust --json, docs).
	Name string
	// Rule says what an untrusted file may set, for error messages.
	Rule string
	// narrows reports whether after, the key's value with the file,
	// confines at least as much as before, its value without it. The
	// values are those of Config.Map (string, int, float64, bool,
	// []string, []int). nil means no other value narrows.
	narrows func(before, after any) bool
}

// The classes of the trust table. Each is one small comparison.
var (
	// Widening keys only take their current value from an untrusted file.
	Widening = Class{"widening", "an untrusted project file may not change it", nil}
	// SmallerSize keys (a byte size) may only get smaller.
	SmallerSize = Class{"smaller-size", "an untrusted project file may only lower it", smallerSize}
	// Smaller keys (a number) may only get smaller.
	Smaller = Class{"smaller", "an untrusted project file may only lower it", smaller}
	// OnlyFalse keys (a switch that lifts confinement) may only be false.
	OnlyFalse = Class{"only-false", "an untrusted project file may only set false", onlyFalse}
	// OnlyDeny keys (a policy default) may only be "deny".
	OnlyDeny = Ranked("deny", "public")
	// SmallerWriteLimit (sandbox.limits.write, where "unlimited" is the
	// widest) may only get smaller.
	SmallerWriteLimit = Class{"smaller-write-limit", "an untrusted project file may only lower it (unlimited is the widest)", smallerWriteLimit}
	// Fewer keys (a list of what is allowed) may only lose entries.
	Fewer = Class{"fewer", "an untrusted project file may only remove entries, never add them", fewer}
	// More keys (a list of what is refused or hidden) may only gain entries.
	More = Class{"more", "an untrusted project file may only add entries, never remove them", more}
	// FewerPorts keys (allowed ports, where an empty list means every
	// port) may only lose entries and never become empty.
	FewerPorts = Class{"fewer-ports", "an untrusted project file may only remove ports (an empty list is every port)", fewerPorts}
)

// Ranked is the class of a key whose values are ordered from the
// strictest to the widest (deny, public; ro, overlay, rw): an untrusted
// file may only pick a value at least as strict as the current one. A
// value not in order narrows nothing.
func Ranked(order ...string) Class {
	rank := func(v any) int {
		s, _ := v.(string)
		return slices.Index(order, s)
	}
	return Class{
		Name: "ranked:" + strings.Join(order, "<"),
		Rule: fmt.Sprintf("an untrusted project file may only pick a value at least as strict, from strictest to widest: %s", strings.Join(order, ", ")),
		narrows: func(before, after any) bool {
			b, a := rank(before), rank(after)
			return a >= 0 && b >= 0 && a <= b
		},
	}
}

// trustTable classes every configuration key, one row per key. A key
// with no row is Widening. Adding a key to Config means adding its row
// here (TestEveryKeyIsClassified fails until it is): Widening unless a
// smaller value of it confines strictly more, whatever the other keys
// say, and one of the classes above (or a new one, with its own small
// comparison) says exactly which values those are.
var trustTable = map[string]Class{
	"sandbox.driver":         Widening, // host is unconfined; each driver confines differently
	"sandbox.image":          Widening, // the image is the world's root filesystem
	"sandbox.limits.memory":  SmallerSize,
	"sandbox.limits.pids":    Smaller,
	"sandbox.limits.cpus":    Smaller,
	"sandbox.limits.off":     OnlyFalse,
	"sandbox.masks":          More,
	"sandbox.home.allow":     Fewer,
	"sandbox.unix_sockets":   OnlyFalse,
	"sandbox.limits.write":   SmallerWriteLimit,
	"sandbox.mounts":         Widening, // every mount shows host files, :rw most of all
	"sandbox.root":           Ranked("minimal", "host"),
	"sandbox.protected":      More,
	"sandbox.workspace.mode": Ranked(string(sandbox.WorkspaceRO), string(sandbox.WorkspaceOverlay), string(sandbox.WorkspaceRW)),
	// Empty is a default that depends on the memory limit: no set value
	// is surely smaller.
	"sandbox.workspace.overlay_size": Widening,

	"network.default": OnlyDeny,
	"network.ports":   FewerPorts,
	"network.allow":   Fewer,
	"network.deny":    More,

	"web.policy.default": OnlyDeny,
	"web.policy.ports":   FewerPorts,
	"web.policy.allow":   Fewer,
	"web.policy.deny":    More,
	// Zero means the built-in default, so a smaller number is not
	// always a smaller limit: these stay widening.
	"web.fetch.timeout":       Widening,
	"web.fetch.max_bytes":     Widening,
	"web.fetch.max_chars":     Widening,
	"web.fetch.max_redirects": Widening,
	// Where queries go and which variable's secret they carry.
	"web.search.provider":      Widening,
	"web.search.searxng_url":   Widening,
	"web.search.brave_key_env": Widening,
	// Commands dsh starts on the user's behalf (confined, but chosen by
	// the file), and the images they run in.
	"lsp.servers": Widening,
	"mcp.servers": Widening, // a server to run, its world, its egress
	// Where dsh listens and writes on the host.
	"proxy.listen":  Widening,
	"proxy.audit":   Widening,
	"proxy.metrics": Widening,
	// Where workspaces keep their files on the host, how many and how
	// long they live, and worlds opened ahead (zero values mean the
	// built-in defaults, so no smaller number is surely narrower).
	"workspaces.root":         Widening,
	"workspaces.max":          Widening,
	"workspaces.ttl":          Widening,
	"workspaces.max_ttl":      Widening,
	"workspaces.idle_timeout": Widening,
	"workspaces.max_file":     Widening,
	"workspaces.pool":         Widening,
}

// KeyClass returns the class of key: its row of the trust table, or
// Widening for a key without one.
func KeyClass(key string) Class {
	if c, ok := trustTable[key]; ok {
		return c
	}
	return Widening
}

// WideningKey is one key of an untrusted file that widens confinement.
type WideningKey struct {
	Key    string `json:"key"`
	Value  any    `json:"value"`  // the key's value with the file
	Before any    `json:"before"` // its value without it
	Class  string `json:"class"`
	Rule   string `json:"rule"`
}

// Error reads like a configuration problem: the key, the values and the
// rule.
func (w WideningKey) Error() string { return w.Key + ": " + w.Msg() }

// Msg is the problem without the key.
func (w WideningKey) Msg() string {
	return fmt.Sprintf("set to %s, would otherwise be %s; %s", jsonText(w.Value), jsonText(w.Before), w.Rule)
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// Widenings returns every key of keys (the keys a file sets) whose value
// in after (the configuration with the file) widens confinement
// relative to before (the configuration without it), by the key's
// class, sorted by key.
func Widenings(keys []string, before, after Config) []WideningKey {
	b, a := before.Map(), after.Map()
	var out []WideningKey
	for _, k := range keys {
		bv, av := lookupKey(b, k), lookupKey(a, k)
		c := KeyClass(k)
		if same(bv, av) || c.narrows != nil && c.narrows(bv, av) {
			continue
		}
		out = append(out, WideningKey{Key: k, Value: av, Before: bv, Class: c.Name, Rule: c.Rule})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// FileKeys returns the known keys a decoded configuration file (nested
// maps, as YAML decodes them) sets, lower-cased as the loader reads
// them, sorted. Unknown keys are CheckKeys's to report.
func FileKeys(raw map[string]any) []string {
	known := map[string]bool{}
	for _, k := range allKeys() {
		known[k] = true
	}
	secs := sections()
	var out []string
	var walk func(m map[string]any, prefix string)
	walk = func(m map[string]any, prefix string) {
		for k, v := range m {
			key := strings.ToLower(k)
			if prefix != "" {
				key = prefix + "." + key
			}
			switch {
			case secs[key]:
				if sub, ok := v.(map[string]any); ok {
					walk(sub, key)
				}
			case known[key]:
				out = append(out, key)
			}
		}
	}
	walk(raw, "")
	sort.Strings(out)
	return slices.Compact(out)
}

// lookupKey finds a dotted key in the nested maps of Config.Map.
func lookupKey(m map[string]any, key string) any {
	var cur any = m
	for _, p := range strings.Split(key, ".") {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[p]
	}
	return cur
}

// same reports whether two values are equal, an empty list equal to a
// missing one.
func same(a, b any) bool {
	if isEmptyList(a) && isEmptyList(b) {
		return true
	}
	return reflect.DeepEqual(a, b)
}

func isEmptyList(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Slice && rv.Len() == 0
}

func smallerSize(before, after any) bool {
	bs, ok1 := before.(string)
	as, ok2 := after.(string)
	if !ok1 || !ok2 {
		return false
	}
	b, err1 := ParseSize(bs)
	a, err2 := ParseSize(as)
	return err1 == nil && err2 == nil && a <= b
}

func smallerWriteLimit(before, after any) bool {
	bs, ok1 := before.(string)
	as, ok2 := after.(string)
	if !ok1 || !ok2 {
		return false
	}
	b, err1 := WriteLimit(bs)
	a, err2 := WriteLimit(as)
	unbounded := func(n int64) uint64 { // 0 is no limit: the largest
		return uint64(n - 1)
	}
	return err1 == nil && err2 == nil && unbounded(a) <= unbounded(b)
}

func smaller(before, after any) bool {
	b, ok1 := number(before)
	a, ok2 := number(after)
	return ok1 && ok2 && a <= b
}

// number is v as a float64, for the int and float kinds; NaN is no
// number (it compares as nothing).
func number(v any) (float64, bool) {
	rv := reflect.ValueOf(v)
	var f float64
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		f = float64(rv.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		f = float64(rv.Uint())
	case reflect.Float32, reflect.Float64:
		f = rv.Float()
	default:
		return 0, false
	}
	return f, !math.IsNaN(f)
}

func onlyFalse(_, after any) bool { return after == false }

// fewer reports whether every entry of after is one of before.
func fewer(before, after any) bool {
	b, ok1 := entries(before)
	a, ok2 := entries(after)
	return ok1 && ok2 && subset(a, b)
}

// more reports whether every entry of before is one of after.
func more(before, after any) bool {
	b, ok1 := entries(before)
	a, ok2 := entries(after)
	return ok1 && ok2 && subset(b, a)
}

// fewerPorts is fewer where an empty list means every port: after may
// not be empty (unless before is), and before empty allows any list.
func fewerPorts(before, after any) bool {
	b, ok1 := entries(before)
	a, ok2 := entries(after)
	switch {
	case !ok1 || !ok2:
		return false
	case len(b) == 0:
		return true
	case len(a) == 0:
		return false
	}
	return subset(a, b)
}

// entries are the elements of a list value, as comparable values.
func entries(v any) ([]any, bool) {
	if v == nil {
		return nil, true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice {
		return nil, false
	}
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = rv.Index(i).Interface()
	}
	return out, true
}

// subset reports whether every element of a is in b.
func subset(a, b []any) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}
