package execworld_test

import (
	"testing"

	"github.com/dsh-dev/dsh/execworld"
)

// ParseVersion accepts exactly what String produces: whatever it accepts
// prints back to the same text's value, and never panics.
func FuzzParseVersion(f *testing.F) {
	f.Add("1:2:3:4:5")
	f.Add("0:0:0:0:0")
	f.Add("18446744073709551615:1:-1:9:9")
	f.Add("1:2:3:4")
	f.Add("a:b:c:d:e")
	f.Fuzz(func(t *testing.T, s string) {
		v, err := execworld.ParseVersion(s)
		if err != nil {
			return
		}
		again, err := execworld.ParseVersion(v.String())
		if err != nil || again != v {
			t.Fatalf("ParseVersion(%q) = %v, but its String %q parses to %v, %v", s, v, v.String(), again, err)
		}
	})
}
