package execworld

import (
	"fmt"
	"strings"

	"github.com/dsh-dev/dsh/sandbox"
)

// noProxy keeps a world's own loopback inside the world: a client that
// honours NO_PROXY connects to a server the world runs on 127.0.0.1 or
// ::1 itself instead of asking the proxy, which could not reach it.
const noProxy = "localhost,127.0.0.1,::1"

// proxyEnv is the proxy environment of every process of a world with
// egress, whatever its driver: HTTP_PROXY and HTTPS_PROXY at the proxy's
// in-world address and NO_PROXY for the world's loopback, each in both
// cases (curl reads only the lower-case http_proxy; Go and most others
// read either).
func proxyEnv(addr string) []string {
	u := "http://" + addr
	return []string{
		"HTTP_PROXY=" + u, "http_proxy=" + u,
		"HTTPS_PROXY=" + u, "https_proxy=" + u,
		"NO_PROXY=" + noProxy, "no_proxy=" + noProxy,
	}
}

// mergeEnv builds a process environment: base (the Spec's Env), then
// world (the world's proxy environment), then the explicit entries
// (Cmd.Env), each list winning over the ones before. The host environment
// never enters. Later duplicates win within each list too; the result has
// one entry per key, in first-seen order.
//
// The override rule for proxy variables: the world's replace the Spec's;
// a command's own replace the world's, and a proxy variable the command
// sets in either case drops the world's entry in the other case, so the
// command's value is the only one of that name. Overriding opens nothing
// in a confining world: its only route out is the proxy address, so a
// command that points elsewhere only loses its network.
func mergeEnv(base, world, explicit []string) ([]string, error) {
	for _, kv := range explicit {
		if err := checkEnv(kv); err != nil {
			return nil, err
		}
	}
	valid := make([]string, 0, len(base))
	for _, kv := range base {
		if checkEnv(kv) == nil {
			valid = append(valid, kv)
		}
	}
	var ownWorld []string // the world's entries the command does not set in any case
	for _, kv := range world {
		if k, _, _ := strings.Cut(kv, "="); !setsFolded(explicit, k) {
			ownWorld = append(ownWorld, kv)
		}
	}
	return sandbox.MergeEnv(valid, ownWorld, explicit), nil
}

// setsFolded reports whether env has an entry for key in any case.
func setsFolded(env []string, key string) bool {
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); strings.EqualFold(k, key) {
			return true
		}
	}
	return false
}

func checkEnv(kv string) error {
	k, _, ok := strings.Cut(kv, "=")
	switch {
	case !ok:
		return fmt.Errorf("%w: environment entry %q is not KEY=VALUE", ErrInvalidCmd, kv)
	case k == "":
		return fmt.Errorf("%w: environment entry %q has an empty key", ErrInvalidCmd, kv)
	case strings.IndexByte(kv, 0) >= 0:
		return fmt.Errorf("%w: environment entry for %q contains a NUL byte", ErrInvalidCmd, k)
	}
	return nil
}
