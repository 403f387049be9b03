package config

import (
	"fmt"
	"strings"
)

// KeyError is a problem with one configuration key.
type KeyError struct {
	Key string // dotted key path, e.g. sandbox.limits.memory
	Msg string // what is wrong and, where possible, the fix
}

func (e *KeyError) Error() string { return e.Key + ": " + e.Msg }

// Errors is every problem found in a configuration, reported together.
type Errors []error

func (es Errors) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d configuration problem(s):", len(es))
	for _, e := range es {
		b.WriteString("\n  ")
		b.WriteString(e.Error())
	}
	return b.String()
}

// Unwrap lets errors.As find a *KeyError among the problems.
func (es Errors) Unwrap() []error { return es }
