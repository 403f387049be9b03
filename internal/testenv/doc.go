// Package testenv gates tests on what the machine provides (Docker, root,
// user namespaces, cgroups): a missing requirement skips the test, unless
// the matching DSH_REQUIRE_* variable is set, in which case it fails.
package testenv
