// Package conformance is the test suite every confining sandbox driver
// must pass: escape attempts (writes outside the workspace, secret
// locations, host processes, capabilities, mount/unshare/ptrace, the
// docker socket, direct TCP, name resolution), egress only through the
// world's proxy under its policy, limits (pids, memory), and the process
// semantics of execworld (timeouts leave nothing behind, exact output
// tails, exit codes).
//
// A driver's own tests call Run with the driver:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, mydriver.New(nil), conformance.Options{})
//	}
//
// Every check runs for every driver; there is no skip list. The programs
// run inside are /bin/sh and a static probe binary the suite builds and
// copies into the workspace, so the same checks work on a Debian image
// and on the host root a native driver mounts read-only.
//
// The suite sends traffic only to listeners it started itself (host
// loopback, the extra host addresses in Options, a listener inside a
// second world) and never to any other address.
package conformance
