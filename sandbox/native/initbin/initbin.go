// Package initbin holds the small init binary (cmd/dsh-init) that
// `make build` builds into this directory and embeds into dsh (build tag
// embedinit), with its SHA-256. It imports nothing that Go initialises
// late, so the earliest packages of dsh can use it (initspawn).
package initbin

// Binary is the embedded init, nil without the build tag embedinit; Sum
// is its SHA-256 in hex, which names its file in a state directory. Tests
// may set both.
var (
	Binary []byte
	Sum    string
)
