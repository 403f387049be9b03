package execworld

import (
	"fmt"
	"strings"

	"github.com/dsh-dev/dsh/sandbox"
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
	valid := make([]string, 0, len(base))
	for _, kv := range base {
		if checkEnv(kv) == nil {
			valid = append(valid, kv)
		}
	}
	return sandbox.MergeEnv(valid, explicit), nil
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
