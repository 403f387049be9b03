package sandbox

// DeniedSyscalls are the syscalls every driver's default filter refuses
// (EPERM or EACCES), whatever else it allows: the contract of a nil
// Spec.Seccomp. They either reach kernel attack surface a tool never
// needs (bpf, io_uring, perf, keys, modules, kexec) or could undo
// confinement (mount, pivot_root, setns, ptrace and friends). New
// namespaces (clone and unshare with CLONE_NEW*) are refused too; each
// driver says how.
var DeniedSyscalls = []string{
	"mount", "umount2", "pivot_root", "chroot", "setns",
	"fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
	"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	"bpf", "perf_event_open", "userfaultfd",
	"keyctl", "add_key", "request_key",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"open_by_handle_at", "name_to_handle_at",
	"swapon", "swapoff", "reboot", "acct", "settimeofday", "clock_settime", "adjtimex",
	"lookup_dcookie", "quotactl", "syslog", "vhangup", "iopl", "ioperm",
}
