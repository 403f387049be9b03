// Package web fetches pages and searches the web on an agent's behalf,
// with every connection - every redirect hop included - made through the
// guarded dialer of package netpolicy.
package web
