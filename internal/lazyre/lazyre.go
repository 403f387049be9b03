// Package lazyre compiles a regular expression on its first use.
//
// A package-level regexp.MustCompile runs during the initialisation of
// every start of the dsh binary, whichever command it runs: a cold
// dsh run would pay for the expressions of workspaces, skills and the
// MCP gateway, which it never uses.
package lazyre

import (
	"regexp"
	"sync"
)

// New returns a function that compiles expr on its first call and
// returns that same Regexp on every call. A bad expr panics on the first
// call, as regexp.MustCompile would during initialisation.
func New(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
