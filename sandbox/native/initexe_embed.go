//go:build embedinit

package native

import _ "embed"

//go:embed initbin/dsh-init
var embeddedInitBinary []byte

func init() { embeddedInit = embeddedInitBinary }
