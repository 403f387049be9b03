package config

import (
	"strings"

	"github.com/dsh-dev/dsh/sandbox"
)

// Unlimited is the sandbox.limits.write value for no write limit.
const Unlimited = "unlimited"

// WriteLimit returns the write budget sandbox.limits.write gives, in
// bytes (Spec.WriteLimit): 0 for unlimited.
func WriteLimit(s string) (int64, error) {
	if strings.EqualFold(strings.TrimSpace(s), Unlimited) {
		return 0, nil
	}
	n, err := ParseSize(s)
	if err != nil {
		return 0, err
	}
	if err := sandbox.CheckWriteLimit(n); err != nil {
		return 0, err
	}
	return n, nil
}

// validateWriteLimit checks sandbox.limits.write, which the flag
// --write-limit sets.
func validateWriteLimit(s string, bad func(key, format string, args ...any)) {
	if _, err := WriteLimit(s); err != nil {
		bad("sandbox.limits.write", "%v; or %s for none (flag --write-limit)", err, Unlimited)
	}
}
