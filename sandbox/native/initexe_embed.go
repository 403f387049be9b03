//go:build embedinit

package native

import (
	_ "embed"
	"strings"
)

var (
	//go:embed initbin/dsh-init
	embeddedInitBinary []byte
	//go:embed initbin/dsh-init.sum
	embeddedInitBinarySum string
)

func init() {
	embeddedInit = embeddedInitBinary
	// sha256sum's line: the hex digest, then the file's name.
	embeddedInitSum, _, _ = strings.Cut(strings.TrimSpace(embeddedInitBinarySum), " ")
}
