// Package sandbox describes confinement and runs processes inside it.
//
// A [Spec] is the single description of a sandbox, expressed with OCI
// runtime-spec types: mounts, namespaces, capabilities, seccomp, rlimits,
// cgroup resources, user, read-only root and no_new_privs. Drivers (the
// subpackages docker and native) turn one Spec into a running [Instance];
// every driver passes the same conformance suite. Processes inside an
// Instance are started and signalled through dsh's own init (package
// sandbox/pid1), so kill semantics are the same for every driver.
//
// The types here carry no driver code, so package execworld can depend on
// them without importing any driver.
package sandbox
