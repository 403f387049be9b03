// Package pty opens pseudo-terminals for processes that need one
// (dsh run -t): the master non-blocking, so its reads and writes wait in
// the Go runtime's poller rather than on an OS thread each (the init of a
// world has a fixed budget of threads), and the process side taken from
// the master itself (TIOCGPTPEER), never by a path lookup in /dev/pts.
package pty
