package api_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/execworld/execworldtest"
	"github.com/dsh-dev/dsh/netpolicy"
	"github.com/dsh-dev/dsh/sandbox"
	"github.com/dsh-dev/dsh/workspace"
	"github.com/dsh-dev/dsh/workspace/api"
)

// fakeOpener opens worlds on the fake backend for the real Manager.
type fakeOpener struct{ b *execworldtest.Backend }

func (o fakeOpener) Open(ctx context.Context, dir string, t workspace.Template, allow []string) (*execworld.World, error) {
	p, err := o.Policy(allow)
	if err != nil {
		return nil, err
	}
	return execworld.Open(ctx, o.b, &execworld.Options{Spec: sandbox.DefaultSpec(dir), Egress: p, Resolver: netpolicy.StubResolver{}})
}

func (fakeOpener) Policy(allow []string) (*netpolicy.Policy, error) {
	return netpolicy.New(netpolicy.Config{Default: "deny", Allow: allow})
}

// newRealFixture is the API over workspace's own Manager (on the fake
// backend): the validation of a create is the Manager's.
func newRealFixture(t *testing.T) *fixture {
	t.Helper()
	m, err := workspace.New(&workspace.Options{Root: t.TempDir(), Opener: fakeOpener{execworldtest.New()}, DefaultDriver: "fake", MaxTTL: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{token: serverToken}
	f.a = api.New(&api.Options{Manager: m, Token: serverToken, MaxBody: 4096})
	f.srv = httptest.NewServer(f.a)
	t.Cleanup(func() { f.srv.Close(); f.a.Close(); m.Close() })
	return f
}

func TestCreateValidation(t *testing.T) {
	f := newRealFixture(t)
	for _, tc := range []struct{ body, want string }{
		{`{"name":"-x"}`, "name"},
		{`{"name":"` + strings.Repeat("a", 64) + `"}`, "name"},
		{`{"name":"UPPER"}`, "name"},
		{`{"driver":"no such"}`, "driver"},
		{`{"image":"has space"}`, "image"},
		{`{"limits":{"pids":-1}}`, "pids"},
		{`{"limits":{"cpus":-0.5}}`, "cpus"},
		{`{"limits":{"memory":"lots"}}`, "memory"},
		{`{"limits":{"memory":"1k"}}`, "memory"},
		{`{"allow":[""]}`, "allow[0]"},
		{`{"allow":["not an entry"]}`, "allow"},
		{`{"ttl":"48h"}`, "maximum"},
		{`{"idle_timeout":"-1s"}`, "negative"},
		{`{"labels":{"bad key":"v"}}`, "label key"},
	} {
		t.Run(tc.body, func(t *testing.T) {
			wantError(t, f.do(t, serverToken, "POST", "/v1/workspaces", tc.body), 400, "invalid", tc.want)
		})
	}
	c := f.create(t, "ok")
	if c.Workspace.Driver != "fake" || c.Token == "" {
		t.Errorf("created %+v", c)
	}
	wantError(t, f.do(t, serverToken, "POST", "/v1/workspaces/ok/extend", `{"by":"48h"}`), 400, "invalid")
}
