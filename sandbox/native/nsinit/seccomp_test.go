package nsinit

import (
	"reflect"
	"testing"

	"golang.org/x/sys/unix"
)

// The program the driver assembles reaches stage 1 instruction for
// instruction, and anything that is not a whole program is refused
// rather than loaded as a shorter one.
func TestFilterCodec(t *testing.T) {
	prog := []unix.SockFilter{
		{Code: 0x20, K: 4},
		{Code: 0x15, Jt: 1, Jf: 0, K: 0xc000003e},
		{Code: 0x06, K: 0x80000000},
		{Code: 0x06, Jt: 0xff, Jf: 0xfe, K: 0x7fff0000},
	}
	got, err := decodeFilter(EncodeFilter(prog))
	if err != nil || !reflect.DeepEqual(got, prog) {
		t.Fatalf("round trip: %v %v, want %v", got, err, prog)
	}
	for _, b := range [][]byte{nil, {}, EncodeFilter(prog)[:12], make([]byte, 8*(maxFilterLen+1))} {
		if _, err := decodeFilter(b); err == nil {
			t.Errorf("a program of %d bytes was accepted", len(b))
		}
	}
}
