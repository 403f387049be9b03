// Package proxy is the egress proxy of a world: an HTTP forward proxy
// (absolute-form requests) and CONNECT tunnel server that applies the
// world's netpolicy.Policy to the traffic of the processes inside it.
//
// It dials only through the world's guarded netpolicy.Dialer, so names
// are resolved by the proxy, only when a name rule could allow them,
// every resolved address is judged, and the address judged is the one
// connected to. It refuses to connect to its own listeners (and to the
// other addresses of its process it is told of), caps header bytes,
// header time, connect time, idle time and connections per world, and
// writes one JSON audit line (AuditRecord) per tunnel and per forwarded
// request. Its Prometheus metrics live here, so the policy core below it
// imports only the standard library.
package proxy
