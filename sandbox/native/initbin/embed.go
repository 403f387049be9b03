//go:build embedinit

package initbin

import (
	_ "embed"
	"strings"
)

var (
	//go:embed dsh-init
	binary []byte
	//go:embed dsh-init.sum
	sumLine string
)

func init() {
	Binary = binary
	// sha256sum's line: the hex digest, then the file's name.
	Sum, _, _ = strings.Cut(strings.TrimSpace(sumLine), " ")
}
