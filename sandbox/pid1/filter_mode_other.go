//go:build !amd64

package pid1

// legacyModeCalls: arm64 (the other architecture the world filter
// supports) has only the *at family.
var legacyModeCalls []modeCall
