package nsinit

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// EncodeFilter is a seccomp program as Config.Seccomp carries it: each
// instruction in 8 bytes, as the kernel's struct sock_filter lays it out
// (code, jt, jf, k), little-endian.
func EncodeFilter(prog []unix.SockFilter) []byte {
	b := make([]byte, 0, 8*len(prog))
	for _, in := range prog {
		b = binary.LittleEndian.AppendUint16(b, in.Code)
		b = append(b, in.Jt, in.Jf)
		b = binary.LittleEndian.AppendUint32(b, in.K)
	}
	return b
}

// maxFilterLen is the kernel's BPF_MAXINSNS.
const maxFilterLen = 4096

// decodeFilter reads Config.Seccomp back.
func decodeFilter(b []byte) ([]unix.SockFilter, error) {
	if len(b) == 0 || len(b)%8 != 0 || len(b)/8 > maxFilterLen {
		return nil, fmt.Errorf("native init: the seccomp program is %d bytes, not 1 to %d instructions of 8", len(b), maxFilterLen)
	}
	prog := make([]unix.SockFilter, len(b)/8)
	for i := range prog {
		in := b[8*i:]
		prog[i] = unix.SockFilter{Code: binary.LittleEndian.Uint16(in), Jt: in[2], Jf: in[3], K: binary.LittleEndian.Uint32(in[4:])}
	}
	return prog, nil
}

// loadFilter installs prog on the calling thread, or with allThreads on
// every thread of the process (SECCOMP_FILTER_FLAG_TSYNC). Without it,
// stage 1 calls it on the locked thread that then calls execve.
func loadFilter(prog []unix.SockFilter, allThreads bool) error {
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	var flags uintptr
	if allThreads {
		flags = unix.SECCOMP_FILTER_FLAG_TSYNC
	}
	if r, _, e := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog))); e != 0 || r != 0 {
		if e == 0 {
			e = unix.EBUSY // TSYNC names a thread it could not synchronise
		}
		return unavailable("install the seccomp filter", e, "the kernel needs CONFIG_SECCOMP_FILTER; use --driver docker")
	}
	return nil
}
