package client_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/workspace"
	"github.com/dsh-dev/dsh/workspace/client"
	"github.com/dsh-dev/dsh/workspace/client/clienttest"
)

func newClient(t *testing.T, url, token string) *client.Client {
	t.Helper()
	c, err := client.New(url, token, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestLifecycle(t *testing.T) {
	f := clienttest.New(t, "server-token")
	c := newClient(t, f.URL(), "server-token")
	ctx := context.Background()
	cr, err := c.Create(ctx, &workspace.CreateRequest{Name: "one", Template: workspace.Template{Driver: "docker", Image: "dsh/base", Limits: workspace.Limits{Memory: "256MiB", Pids: 64}},
		TTL: workspace.Duration(time.Hour), Labels: map[string]string{"k": "v"}, Allow: []string{"example.com:443"}})
	if err != nil {
		t.Fatal(err)
	}
	if cr.Token == "" || cr.Workspace.Name != "one" || cr.Workspace.Driver != "docker" || cr.Workspace.Limits.Pids != 64 || cr.Workspace.Labels["k"] != "v" {
		t.Errorf("Create = %+v", cr)
	}
	if _, err := c.Create(ctx, &workspace.CreateRequest{}); err != nil {
		t.Fatal(err)
	}
	list, err := c.List(ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("List = %v, %v; want two", list, err)
	}
	got, err := c.Get(ctx, "one")
	if err != nil || got.State != workspace.StateRunning {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	ext, err := c.Extend(ctx, "one", 3*time.Hour)
	if err != nil || !ext.ExpiresAt.After(got.ExpiresAt.Add(time.Hour)) {
		t.Errorf("Extend = %+v, %v; want the expiry ~3 h from now", ext, err)
	}
	if p, err := c.Pause(ctx, "one"); err != nil || p.State != workspace.StatePaused {
		t.Errorf("Pause = %+v, %v", p, err)
	}
	if _, err := c.Exec(ctx, "one", &workspace.ExecRequest{Argv: []string{"echo"}}, nil, nil); !errors.Is(err, workspace.ErrConflict) {
		t.Errorf("Exec while paused = %v, want a conflict", err)
	}
	if p, err := c.Resume(ctx, "one"); err != nil || p.State != workspace.StateRunning {
		t.Errorf("Resume = %+v, %v", p, err)
	}

	// Files, with a name that needs escaping.
	if err := c.WriteFile(ctx, "one", "/dir/a b#?.txt", strings.NewReader("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	if data, mode, ok := f.File("one", "dir/a b#?.txt"); !ok || string(data) != "hello" || mode != "0600" {
		t.Errorf("the server holds %q mode %q (%v)", data, mode, ok)
	}
	var buf bytes.Buffer
	if n, err := c.ReadFile(ctx, "one", "dir/a b#?.txt", &buf); err != nil || n != 5 || buf.String() != "hello" {
		t.Errorf("ReadFile = %d %q %v", n, buf.String(), err)
	}
	ents, err := c.ListDir(ctx, "one", "dir")
	if err != nil || len(ents) != 1 || ents[0].Name != "a b#?.txt" || ents[0].Size != 5 {
		t.Errorf("ListDir = %+v, %v", ents, err)
	}
	if err := c.Remove(ctx, "one", "dir/a b#?.txt"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReadFile(ctx, "one", "dir/a b#?.txt", &buf); !errors.Is(err, workspace.ErrNotFound) {
		t.Errorf("ReadFile of a removed file = %v, want not found", err)
	}
	if err := c.WriteFile(ctx, "one", "../escape", strings.NewReader("x"), 0); err == nil || !strings.Contains(err.Error(), "leave the workspace") {
		t.Errorf("WriteFile ../escape = %v, want refused before sending", err)
	}

	if err := c.Delete(ctx, "one"); err != nil {
		t.Fatal(err)
	}
	_, err = c.Get(ctx, "one")
	var ae *client.Error
	if !errors.As(err, &ae) || ae.Status != 404 || ae.Code != "not_found" || !strings.Contains(ae.Message, `no such workspace "one"`) || !errors.Is(err, workspace.ErrNotFound) {
		t.Errorf("Get after Delete = %#v", err)
	}
}

func TestErrorsDecoded(t *testing.T) {
	f := clienttest.New(t, "server-token")
	ctx := context.Background()
	srv := newClient(t, f.URL(), "server-token")
	if _, err := srv.Create(ctx, &workspace.CreateRequest{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	b, err := srv.Create(ctx, &workspace.CreateRequest{Name: "b"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what   string
		call   func() error
		status int
		code   string
		is     error
	}{
		{"no token", func() error { _, err := newClient(t, f.URL(), "").List(ctx); return err }, 401, "unauthorized", nil},
		{"a workspace token on another workspace", func() error { _, err := newClient(t, f.URL(), b.Token).Get(ctx, "a"); return err }, 403, "forbidden", workspace.ErrForbidden},
		{"a workspace token on a server route", func() error { _, err := newClient(t, f.URL(), b.Token).List(ctx); return err }, 403, "forbidden", workspace.ErrForbidden},
		{"an existing name", func() error { _, err := srv.Create(ctx, &workspace.CreateRequest{Name: "a"}); return err }, 409, "conflict", workspace.ErrExists},
		{"an invalid name at the server", func() error { _, err := srv.Create(ctx, &workspace.CreateRequest{Name: "A_B"}); return err }, 400, "invalid", workspace.ErrInvalid},
	} {
		err := c.call()
		var ae *client.Error
		if !errors.As(err, &ae) || ae.Status != c.status || ae.Code != c.code || ae.Message == "" {
			t.Errorf("%s: %#v; want HTTP %d %s with a message", c.what, err, c.status, c.code)
			continue
		}
		if c.is != nil && !errors.Is(err, c.is) {
			t.Errorf("%s: errors.Is(%v, %v) is false", c.what, err, c.is)
		}
	}
	// Its own token reaches its workspace.
	if _, err := newClient(t, f.URL(), b.Token).Get(ctx, "b"); err != nil {
		t.Errorf("a workspace's own token: %v", err)
	}
	// A name the API cannot have is refused before any request.
	if _, err := srv.Get(ctx, "../v1"); err == nil || !strings.Contains(err.Error(), "workspace name") {
		t.Errorf("Get(../v1) = %v", err)
	}
}

// An answer without the API's body still becomes an *Error, and a
// server that does not answer a *ConnError.
func TestForeignAnswersAndNoServer(t *testing.T) {
	h := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad gateway", http.StatusBadGateway)
	}))
	defer h.Close()
	_, err := newClient(t, h.URL, "").Get(context.Background(), "x")
	var ae *client.Error
	if !errors.As(err, &ae) || ae.Status != 502 || ae.Code != "internal" || !strings.Contains(ae.Message, "bad gateway") {
		t.Errorf("a foreign 502: %#v", err)
	}
	h.Close()
	_, err = newClient(t, h.URL, "").Get(context.Background(), "x")
	var ce *client.ConnError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "did not answer") {
		t.Errorf("no server: %#v", err)
	}
	if _, err := client.New("127.0.0.1:8765", "", nil); err == nil {
		t.Error("a URL without a scheme was accepted")
	}
}

func TestExecStreamsAndReportsTheExit(t *testing.T) {
	f := clienttest.New(t, "tok")
	c := newClient(t, f.URL(), "tok")
	ctx := context.Background()
	if _, err := c.Create(ctx, &workspace.CreateRequest{Name: "e"}); err != nil {
		t.Fatal(err)
	}
	// Interleaved output reaches each writer in order.
	var order []string
	var out, errb bytes.Buffer
	x, err := c.Exec(ctx, "e", &workspace.ExecRequest{Argv: []string{"interleave"}}, recorder{&out, "out", &order}, recorder{&errb, "err", &order})
	if err != nil || x.Code != 0 || out.String() != "o1\no2\n" || errb.String() != "e1\n" || strings.Join(order, ",") != "out,err,out" {
		t.Errorf("interleave: %+v %v, stdout %q stderr %q order %v", x, err, out.String(), errb.String(), order)
	}
	out.Reset()
	if x, err := c.Exec(ctx, "e", &workspace.ExecRequest{Argv: []string{"cat"}, Stdin: []byte("in\x00put")}, &out, nil); err != nil || out.String() != "in\x00put" || client.ExitStatus(x) != 0 {
		t.Errorf("cat: %+v %v %q", x, err, out.String())
	}
	errb.Reset()
	x, err = c.Exec(ctx, "e", &workspace.ExecRequest{Argv: []string{"exit", "42"}}, nil, &errb)
	if err != nil || client.ExitStatus(x) != 42 || errb.String() != "exiting 42\n" {
		t.Errorf("exit 42: %+v %v %q", x, err, errb.String())
	}
	for sig, want := range map[string]int{"SIGTERM": 143, "KILL": 137, "killed": 137, "9": 137} {
		x, err := c.Exec(ctx, "e", &workspace.ExecRequest{Argv: []string{"signal", sig}}, nil, nil)
		if err != nil || client.ExitStatus(x) != want {
			t.Errorf("signal %s: %+v %v; want status %d", sig, x, err, want)
		}
	}
	_, err = c.Exec(ctx, "e", &workspace.ExecRequest{Argv: []string{"no-such"}}, nil, nil)
	var ae *client.Error
	if !errors.As(err, &ae) || ae.Status != 400 || !strings.Contains(ae.Message, "not found") {
		t.Errorf("a command that cannot start: %#v", err)
	}
	out.Reset()
	_, err = c.Exec(ctx, "e", &workspace.ExecRequest{Argv: []string{"cut"}}, &out, nil)
	var ce *client.ConnError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "before the command's exit") || out.String() != "partial\n" {
		t.Errorf("a stream cut before the exit: %v (stdout %q)", err, out.String())
	}
}

type recorder struct {
	w     *bytes.Buffer
	name  string
	order *[]string
}

func (r recorder) Write(p []byte) (int, error) {
	*r.order = append(*r.order, r.name)
	return r.w.Write(p)
}
