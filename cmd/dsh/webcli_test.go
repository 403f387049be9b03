package main

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// dshBinary runs the built static dsh with args, no user configuration
// and no search keys, and returns its stdout, stderr and exit status.
func dshBinary(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(staticDsh(t), args...)
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + cmd.Dir, "XDG_CONFIG_HOME=" + filepath.Join(cmd.Dir, ".config")}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running dsh: %v", err)
	}
	return o.String(), e.String(), code
}

func webcliServer(t *testing.T) (*httptest.Server, string) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if r.URL.Path == "/missing" {
			w.WriteHeader(http.StatusNotFound)
		}
		fmt.Fprint(w, "<h1>Hello</h1><p>page "+r.URL.Path+"</p>")
	}))
	t.Cleanup(srv.Close)
	return srv, srv.Listener.Addr().String()
}

// The page alone goes to stdout, so "dsh fetch URL > page.md" is clean;
// the status line goes to stderr.
func TestWebcliFetchStdoutStderrSplit(t *testing.T) {
	srv, hp := webcliServer(t)
	out, errOut, code := dshBinary(t, "fetch", "--allow", hp, srv.URL+"/a")
	if code != 0 || out != "# Hello\n\npage /a\n" {
		t.Errorf("stdout %q, exit %d; want the Markdown alone, exit 0 (stderr %q)", out, code, errOut)
	}
	if errOut != "Fetched "+srv.URL+"/a (HTTP 200)\n" {
		t.Errorf("stderr %q; want the status line", errOut)
	}
	// A non-2xx status is a page like any other without --fail.
	out, errOut, code = dshBinary(t, "fetch", "--allow", hp, srv.URL+"/missing")
	if code != 0 || !strings.Contains(out, "page /missing") || !strings.Contains(errOut, "(HTTP 404)") {
		t.Errorf("404 without --fail: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestWebcliFetchFail(t *testing.T) {
	srv, hp := webcliServer(t)
	out, errOut, code := dshBinary(t, "fetch", "--fail", "--allow", hp, srv.URL+"/missing")
	if code != 1 || out != "" || !strings.Contains(errOut, "HTTP 404") {
		t.Errorf("--fail on 404: exit %d, stdout %q, stderr %q; want exit 1, no page", code, out, errOut)
	}
	out, _, code = dshBinary(t, "fetch", "--fail", "--json", "--allow", hp, srv.URL+"/missing")
	if code != 1 || !strings.Contains(out, `"status":404`) {
		t.Errorf("--fail --json on 404: exit %d, stdout %q; want exit 1 with the result", code, out)
	}
	if out, _, code := dshBinary(t, "fetch", "--fail", "--allow", hp, srv.URL+"/ok"); code != 0 || !strings.Contains(out, "page /ok") {
		t.Errorf("--fail on 200: exit %d, stdout %q", code, out)
	}
}

func TestWebcliFetchOutput(t *testing.T) {
	srv, hp := webcliServer(t)
	file := filepath.Join(t.TempDir(), "page.md")
	out, errOut, code := dshBinary(t, "fetch", "--output", file, "--allow", hp, srv.URL+"/x")
	if code != 0 || out != "" || !strings.Contains(errOut, "(HTTP 200)") {
		t.Fatalf("--output: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "# Hello\n\npage /x\n" {
		t.Errorf("page.md = %q, %v", b, err)
	}
	// --fail on a 404 leaves an existing file as it was.
	if _, _, code := dshBinary(t, "fetch", "-o", file, "--fail", "--allow", hp, srv.URL+"/missing"); code != 1 {
		t.Errorf("--fail -o on 404: exit %d", code)
	}
	if b, _ := os.ReadFile(file); string(b) != "# Hello\n\npage /x\n" {
		t.Errorf("page.md after a failed fetch = %q; want it untouched", b)
	}
}

// A closed loopback port (allowed explicitly, so the dial is attempted)
// is WEB_CONNECT_FAILED.
func TestWebcliFetchConnectFailed(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hp := l.Addr().String()
	l.Close()
	out, errOut, code := dshBinary(t, "fetch", "--json", "--allow", hp, "http://"+hp+"/")
	if code != 1 || !strings.Contains(out, `"code":"WEB_CONNECT_FAILED"`) || !strings.Contains(errOut, "WEB_CONNECT_FAILED") {
		t.Errorf("closed port: exit %d, stdout %q, stderr %q; want exit 1 with WEB_CONNECT_FAILED", code, out, errOut)
	}
}

// ^C during a fetch exits 130, as a shell reports a SIGINT death.
func TestWebcliFetchInterruptExits130(t *testing.T) {
	got := make(chan struct{}, 1)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	cmd := exec.Command(staticDsh(t), "fetch", "--allow", srv.Listener.Addr().String(), srv.URL+"/slow")
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + cmd.Dir, "XDG_CONFIG_HOME=" + cmd.Dir}
	var e bytes.Buffer
	cmd.Stderr = &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-got:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("dsh fetch never reached the server")
	}
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 130 || !strings.Contains(e.String(), "WEB_ABORTED") {
		t.Errorf("after ^C: %v, stderr %q; want exit 130 with WEB_ABORTED", err, e.String())
	}
}

// The words of dsh search reach the provider as one query.
func TestWebcliSearchJoinsWords(t *testing.T) {
	webTestEnv(t)
	var seen []string
	searx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.URL.Query().Get("q"))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"results":[]}`)
	}))
	defer searx.Close()
	t.Setenv("DSH_WEB_SEARCH_SEARXNG_URL", searx.URL)
	if out, err := runDsh(t, "search", "how", "do", "I", "cancel", "a", "context"); err != nil {
		t.Fatalf("dsh search: %v\n%s", err, out)
	}
	if len(seen) != 1 || seen[0] != "how do I cancel a context" {
		t.Errorf("provider saw queries %q; want the one joined query", seen)
	}
}
