//go:build !amd64 && !arm64

package initspawn

// sysMemfdCreate is unknown here: the init runs from its cached file or
// dsh's own binary.
const sysMemfdCreate = -1
