package config

import (
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Keys returns every configuration key, dotted (sandbox.limits.memory),
// in sorted order. Only leaves are listed. The slice is the caller's.
func Keys() []string { return slices.Clone(allKeys()) }

// allKeys is Keys, computed once (the Config type does not change) and
// shared: never modify it.
var allKeys = sync.OnceValue(func() []string {
	var keys []string
	walkKeys(reflect.TypeFor[Config](), "", func(k string) { keys = append(keys, k) })
	sort.Strings(keys)
	return keys
})

// sections returns the keys that have children (sandbox, sandbox.limits).
func sections() map[string]bool {
	s := map[string]bool{}
	for _, k := range allKeys() {
		for i := strings.IndexByte(k, '.'); i >= 0; i = next(k, i) {
			s[k[:i]] = true
		}
	}
	return s
}

func next(k string, i int) int {
	j := strings.IndexByte(k[i+1:], '.')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}

// keyName is the configuration key of a struct field: its mapstructure
// tag, or, for an exported field without one (the policy sections are
// netpolicy.Config, which has no tags), its name lower-cased: the name
// mapstructure (case-insensitively) and yaml (lower-cased) read it by.
// "" means the field is no key.
func keyName(f reflect.StructField) string {
	if name, ok := f.Tag.Lookup("mapstructure"); ok {
		name, _, _ = strings.Cut(name, ",")
		if name == "-" {
			return ""
		}
		return name
	}
	if !f.IsExported() {
		return ""
	}
	return strings.ToLower(f.Name)
}

func walkKeys(t reflect.Type, prefix string, f func(string)) {
	for i := range t.NumField() {
		fld := t.Field(i)
		name := keyName(fld)
		if name == "" {
			continue
		}
		key := name
		if prefix != "" {
			key = prefix + "." + name
		}
		if fld.Type.Kind() == reflect.Struct {
			walkKeys(fld.Type, key, f)
			continue
		}
		f(key)
	}
}

// CheckKeys reports every key of a decoded configuration file (nested
// maps, as YAML decodes them) that dsh does not know, each with the
// nearest known key as a suggestion.
func CheckKeys(raw map[string]any) []error {
	known := map[string]bool{}
	for _, k := range allKeys() {
		known[k] = true
	}
	secs := sections()
	var errs []error
	var walk func(m map[string]any, prefix string)
	walk = func(m map[string]any, prefix string) {
		names := make([]string, 0, len(m))
		for k := range m {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			key := strings.ToLower(k)
			if prefix != "" {
				key = prefix + "." + key
			}
			switch {
			case secs[key]:
				if sub, ok := m[k].(map[string]any); ok {
					walk(sub, key)
				} else if m[k] != nil {
					errs = append(errs, &KeyError{Key: key, Msg: "is a section; expected a mapping of keys"})
				}
			case known[key]:
				errs = append(errs, checkEntries(key, m[k])...)
			default:
				errs = append(errs, &KeyError{Key: key, Msg: "is not a known setting" + suggest(key, known, secs)})
			}
		}
	}
	walk(raw, "")
	return errs
}

// suggest names the known key (or section) at the same level closest to
// key, if one is close enough to be a likely typo.
func suggest(key string, known, secs map[string]bool) string {
	parent, leaf := "", key
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		parent, leaf = key[:i], key[i+1:]
	}
	best, bestD := "", 1<<30
	consider := func(cand string) {
		cp, cl := "", cand
		if i := strings.LastIndexByte(cand, '.'); i >= 0 {
			cp, cl = cand[:i], cand[i+1:]
		}
		if cp != parent {
			return
		}
		if d := editDistance(leaf, cl); d < bestD {
			best, bestD = cl, d
		}
	}
	for k := range known {
		consider(k)
	}
	for k := range secs {
		consider(k)
	}
	if best == "" || bestD > max(2, len(leaf)/3) {
		return ""
	}
	return "; did you mean " + `"` + best + `"?`
}

// editDistance is the Damerau-Levenshtein distance (with adjacent
// transpositions, so "netwrok" is one edit from "network").
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// Map renders c as nested maps keyed like a configuration file.
func (c Config) Map() map[string]any { return structMap(reflect.ValueOf(c)) }

func structMap(v reflect.Value) map[string]any {
	m := map[string]any{}
	t := v.Type()
	for i := range t.NumField() {
		name := keyName(t.Field(i))
		if name == "" {
			continue
		}
		f := v.Field(i)
		if f.Kind() == reflect.Struct {
			m[name] = structMap(f)
		} else {
			m[name] = f.Interface()
		}
	}
	return m
}
