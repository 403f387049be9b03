#include "textflag.h"

// earlyEntry is the process entry point of dsh-init (linked with
// -E=main.earlyEntry, see the Makefile). Before the Go runtime starts its
// first thread it does, on the only thread there is, what the init would
// otherwise do on every thread at once in package initialisation with
// one stop-the-world round per call (44 of them): empty the capability
// bounding set, lock securebits, clear the ambient set and set
// no_new_privs. Every thread the runtime starts later is cloned from this
// one and inherits all four. None of them touches the effective set the
// setup still needs. It checks no result: package nsinit verifies the
// state before it relies on it and falls back to the all-threads drop.
// It touches only AX, BX, CX, DX, SI, DI, R8, R10 and R11, never the
// stack, which holds argc, argv and the environment for the runtime.
TEXT ·earlyEntry(SB),NOSPLIT|NOFRAME,$0
	XORQ	BX, BX
drop:
	MOVQ	$157, AX // prctl
	MOVQ	$24, DI  // PR_CAPBSET_DROP
	MOVQ	BX, SI
	XORQ	DX, DX
	XORQ	R10, R10
	XORQ	R8, R8
	SYSCALL
	CMPQ	AX, $0
	JNE	dropped // EINVAL: past the last capability the kernel knows
	INCQ	BX
	CMPQ	BX, $64
	JLT	drop
dropped:
	MOVQ	$157, AX
	MOVQ	$28, DI  // PR_SET_SECUREBITS
	MOVQ	$0xef, SI // noroot, no_setuid_fixup, keep_caps_locked, no_cap_ambient_raise, all locked
	SYSCALL
	MOVQ	$157, AX
	MOVQ	$47, DI  // PR_CAP_AMBIENT
	MOVQ	$4, SI   // PR_CAP_AMBIENT_CLEAR_ALL
	SYSCALL
	MOVQ	$157, AX
	MOVQ	$38, DI  // PR_SET_NO_NEW_PRIVS
	MOVQ	$1, SI
	SYSCALL
	JMP	_rt0_amd64_linux(SB)
