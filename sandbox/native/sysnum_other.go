//go:build !amd64 && !arm64

package native

// The native driver supports amd64 and arm64 only (auditArch): no filter
// is assembled elsewhere.
var (
	archSyscalls = map[string]uint32{}
	archAbsent   []string
)
