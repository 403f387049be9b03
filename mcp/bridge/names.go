package bridge

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/dsh-dev/dsh/internal/lazyre"
)

// MaxPublicName is the longest public tool name: the function-name limit
// of the model APIs the names are offered to.
const MaxPublicName = 64

// serverNameRE is what a configured server name must match.
var serverNameRE = lazyre.New(`^[A-Za-z0-9_-]{1,32}$`)

// ValidServerName reports whether name may name a server: 1 to 32
// characters from [A-Za-z0-9_-].
func ValidServerName(name string) bool { return serverNameRE().MatchString(name) }

// PublicName is the model-facing name of tool raw of server, a pure
// function of the two (a compatibility contract: session histories and
// permission rules hold these names). "mcp__<server>__<raw>" with every
// character outside [A-Za-z0-9_-] replaced by "_"; if that changed the
// name or it is longer than MaxPublicName, its first 51 characters, "_"
// and the first 12 hex digits of sha256(server + "\x00" + raw), so that
// distinct identities never share a name.
func PublicName(server, raw string) string {
	joined := "mcp__" + server + "__" + raw
	// One "_" per UTF-16 code unit of a replaced character (two for a
	// character outside the BMP), as the reference's regular expression
	// replaces them, so that both spell the same names.
	norm := make([]byte, 0, len(joined))
	changed := false
	for _, c := range joined {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
			norm = append(norm, byte(c))
		case c > 0xFFFF:
			norm = append(norm, '_', '_')
			changed = true
		default:
			norm = append(norm, '_')
			changed = true
		}
	}
	if !changed && len(norm) <= MaxPublicName {
		return joined
	}
	sum := sha256.Sum256([]byte(server + "\x00" + raw))
	hash := hex.EncodeToString(sum[:])[:12]
	keep := MaxPublicName - 13
	if len(norm) < keep {
		keep = len(norm)
	}
	return string(norm[:keep]) + "_" + hash
}

// MayOwn reports whether public can be the public name of a tool of
// server: it starts with mcp__<server>__, or, for a name cut and hashed
// to MaxPublicName, with the part of that prefix the cut kept. A lazy
// server is started for a call of a name it may own.
func MayOwn(server, public string) bool {
	prefix := "mcp__" + server + "__"
	if len(public) >= len(prefix) && public[:len(prefix)] == prefix {
		return true
	}
	keep := MaxPublicName - 13
	return len(public) == MaxPublicName && len(prefix) > keep && prefix[:keep] == public[:keep]
}
