package config

import (
	"fmt"
	"strings"

	"github.com/dsh-dev/dsh/sandbox"
)

// validateProtected checks sandbox.protected with the rules of
// sandbox.CheckProtected, one error per bad entry.
func validateProtected(list []string, bad func(key, format string, args ...any)) {
	for i, p := range list {
		if err := sandbox.CheckProtected([]string{p}); err != nil {
			msg := err.Error()
			if _, rest, ok := strings.Cut(msg, ": "); ok {
				msg = rest // the SpecError's field is the config key here
			}
			bad(fmt.Sprintf("sandbox.protected[%d]", i), "%s", msg)
		}
	}
}
