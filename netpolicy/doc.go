// Package netpolicy decides where dsh and the worlds it runs may connect.
//
// A Policy judges a destination in a fixed order (always-deny metadata
// endpoints, explicit deny, special-purpose address ranges, explicit
// allow, the default) and every Decision carries its reason and rule. The
// guarded Dialer resolves, checks every address, and dials only the
// address it checked; the egress Proxy applies a world's Policy to the
// traffic of the processes inside it.
//
// netpolicy imports only the standard library and metrics packages.
package netpolicy
