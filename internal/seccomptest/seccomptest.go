// Package seccomptest runs seccomp programs in x/net/bpf's interpreter,
// for the tests of the filters dsh assembles (package pid1's world
// filter, the native driver's deny list).
package seccomptest

import (
	"encoding/binary"
	"testing"

	"golang.org/x/net/bpf"
)

// Data is struct seccomp_data for the call nr(args...) made through the
// ABI arch, as a filter's 32-bit loads see it on a little-endian
// architecture. The kernel loads words in native order, the interpreter
// (made for packets) in network order, so each word is stored big-endian.
func Data(arch, nr uint32, args ...uint64) []byte {
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[0:], nr)
	binary.BigEndian.PutUint32(b[4:], arch)
	for i, a := range args {
		binary.BigEndian.PutUint32(b[16+8*i:], uint32(a))
		binary.BigEndian.PutUint32(b[16+8*i+4:], uint32(a>>32))
	}
	return b
}

// VM is the interpreter for the program raw; the test fails if raw does
// not disassemble or is not a valid program.
func VM(t testing.TB, raw []bpf.RawInstruction) *bpf.VM {
	t.Helper()
	insts, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatal("the filter does not disassemble")
	}
	vm, err := bpf.NewVM(insts)
	if err != nil {
		t.Fatal(err)
	}
	return vm
}
