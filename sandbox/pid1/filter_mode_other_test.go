//go:build !amd64

package pid1

// legacyModeCases: no legacy calls on this architecture.
func legacyModeCases(eperm, allow uint32) []struct {
	name string
	nr   uint32
	args []uint64
	want uint32
} {
	return nil
}
