//go:build !unix

package web

import "testing"

// reportCPU reports nothing where getrusage is missing.
func reportCPU(b *testing.B) func() { return func() {} }
