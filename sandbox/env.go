package sandbox

import "strings"

// MergeEnv merges KEY=VALUE lists into one entry per key: a later entry
// wins, within a list too, in the position where its key first appeared.
// Every environment a world's process gets is built with it (base, then
// the explicit entries), so the explicit entry wins for getenv in the
// process and for the PATH search alike.
func MergeEnv(lists ...[]string) []string {
	idx := map[string]int{}
	var out []string
	for _, l := range lists {
		for _, kv := range l {
			k, _, _ := strings.Cut(kv, "=")
			if i, ok := idx[k]; ok {
				out[i] = kv
				continue
			}
			idx[k] = len(out)
			out = append(out, kv)
		}
	}
	return out
}

// LookupEnv returns the value of the last entry of key in env.
func LookupEnv(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// PathOf returns the PATH of env, or DefaultPath when env has none.
func PathOf(env []string) string {
	if p, ok := LookupEnv(env, "PATH"); ok {
		return p
	}
	return DefaultPath
}
