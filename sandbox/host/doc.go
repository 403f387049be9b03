// Package host is the unconfined sandbox driver: processes run directly on
// the host, in their own process groups, with the environment the caller
// gives and nothing else. It confines nothing — no filesystem view, no
// limits, no network isolation — and exists for development and for
// machines where no confining driver works. dsh selects it only with
// --unconfined and says so on every output.
package host
