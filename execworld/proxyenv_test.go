package execworld_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/execworld/execworldtest"
	"github.com/dsh-dev/dsh/netpolicy"
	"github.com/dsh-dev/dsh/sandbox"
)

// proxyVars runs env in w and returns its proxy variables, sorted.
func proxyVars(t *testing.T, w *execworld.World, env ...string) []string {
	t.Helper()
	res := run(t, w, &execworld.Cmd{Argv: []string{"env"}, Env: env})
	var out []string
	for _, l := range strings.Split(res.Stdout.String(), "\n") {
		if k, _, _ := strings.Cut(l, "="); strings.HasSuffix(strings.ToLower(k), "_proxy") {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return out
}

// execworld decides the proxy environment, the same for every driver:
// both cases of HTTP(S)_PROXY at the driver's proxy address and NO_PROXY
// for the world's loopback. The world's values replace the Spec's; a
// command's own replace the world's in both cases.
func TestProxyEnvironment(t *testing.T) {
	spec := sandbox.DefaultSpec(t.TempDir())
	spec.Env = append(spec.Env, "http_proxy=http://spec.invalid:1", "NO_PROXY=spec")
	w, _ := execworldtest.NewWorld(t, &execworld.Options{Spec: spec, Egress: netpolicy.MustNew(netpolicy.SandboxDefault())})
	got := proxyVars(t, w)
	if len(got) != 6 {
		t.Fatalf("proxy variables = %q; want six", got)
	}
	_, u, _ := strings.Cut(got[0], "=") // HTTPS_PROXY
	if !strings.HasPrefix(u, "http://127.0.0.1:") {
		t.Fatalf("proxy URL %q", u)
	}
	want := []string{"HTTPS_PROXY=" + u, "HTTP_PROXY=" + u, "NO_PROXY=localhost,127.0.0.1,::1",
		"http_proxy=" + u, "https_proxy=" + u, "no_proxy=localhost,127.0.0.1,::1"}
	if !slices.Equal(got, want) {
		t.Fatalf("proxy variables = %q; want %q", got, want)
	}
	got = proxyVars(t, w, "https_proxy=http://own:2", "NO_PROXY=")
	want = []string{"HTTP_PROXY=" + u, "NO_PROXY=", "http_proxy=" + u, "https_proxy=http://own:2"}
	if !slices.Equal(got, want) {
		t.Fatalf("with the command's own https_proxy and NO_PROXY: %q; want %q", got, want)
	}

	// Without egress the world sets none; the Spec's pass as they are.
	w2, _ := execworldtest.NewWorld(t, &execworld.Options{Spec: spec})
	if got := proxyVars(t, w2); !slices.Equal(got, []string{"NO_PROXY=spec", "http_proxy=http://spec.invalid:1"}) {
		t.Fatalf("without egress: %q", got)
	}
}
