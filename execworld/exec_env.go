package execworld

import (
	"fmt"
	"strings"
)

// mergeEnv builds a process environment: base (the Spec's Env), then the
// explicit entries, which win. The host environment never enters. Later
// duplicates win within each list too; the result has one entry per key,
// in first-seen order.
func mergeEnv(base, explicit []string) ([]string, error) {
	for _, kv := range explicit {
		if err := checkEnv(kv); err != nil {
			return nil, err
		}
	}
	idx := map[string]int{}
	var out []string
	add := func(kv string) {
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := idx[k]; ok {
			out[i] = kv
			return
		}
		idx[k] = len(out)
		out = append(out, kv)
	}
	for _, kv := range base {
		if checkEnv(kv) == nil {
			add(kv)
		}
	}
	for _, kv := range explicit {
		add(kv)
	}
	return out, nil
}

func checkEnv(kv string) error {
	k, _, ok := strings.Cut(kv, "=")
	switch {
	case !ok:
		return fmt.Errorf("%w: environment entry %q is not KEY=VALUE", ErrInvalidCmd, kv)
	case k == "":
		return fmt.Errorf("%w: environment entry %q has an empty key", ErrInvalidCmd, kv)
	case strings.IndexByte(kv, 0) >= 0:
		return fmt.Errorf("%w: environment entry for %q contains a NUL byte", ErrInvalidCmd, k)
	}
	return nil
}
