package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// lockedLines collects a process's stderr and lets a test wait for a line.
type lockedLines struct {
	mu    sync.Mutex
	lines []string
	added chan struct{}
}

func (l *lockedLines) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		l.mu.Lock()
		l.lines = append(l.lines, sc.Text())
		l.mu.Unlock()
		select {
		case l.added <- struct{}{}:
		default:
		}
	}
}

// wait returns the first submatch of re in a line after the first skip
// lines, waiting up to 10s for it.
func (l *lockedLines) wait(t *testing.T, skip int, re string) (string, int) {
	t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.After(10 * time.Second)
	for {
		l.mu.Lock()
		for i := skip; i < len(l.lines); i++ {
			if m := rx.FindStringSubmatch(l.lines[i]); m != nil {
				l.mu.Unlock()
				return m[len(m)-1], i + 1
			}
		}
		all := strings.Join(l.lines, "\n")
		l.mu.Unlock()
		select {
		case <-l.added:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("no stderr line matching %q; stderr:\n%s", re, all)
		}
	}
}

// TestProxySIGHUPReloadsThePolicy runs the built dsh proxy, checks
// /healthz and the start-up summary, and reloads its policy file with
// SIGHUP: a good file is put in force at once, a broken one is refused
// with its problems while the policy in force stays.
func TestProxySIGHUPReloadsThePolicy(t *testing.T) {
	bin := staticDsh(t)
	dir := t.TempDir()
	pol := filepath.Join(dir, "egress.yaml")
	if err := os.WriteFile(pol, []byte("default: deny\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "upstream") }))
	defer up.Close()
	upAddr := strings.TrimPrefix(up.URL, "http://")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "proxy", "--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0", "--policy", pol)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+dir)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := &lockedLines{added: make(chan struct{}, 1)}
	done := make(chan struct{})
	go func() { lines.read(stderr); close(done) }()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		<-done
		cmd.Wait()
	}()

	summary, _ := lines.wait(t, 0, `^dsh proxy: policy (.*)$`)
	if !strings.Contains(summary, "default deny") || !strings.Contains(summary, pol) {
		t.Errorf("start-up policy line %q, want the default and the file %s", summary, pol)
	}
	metrics, _ := lines.wait(t, 0, `health on http://(\S+)/healthz`)
	addr, n := lines.wait(t, 0, `serving world "proxy" on (\S+)$`)

	resp, err := http.Get("http://" + metrics + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.TrimSpace(string(body)) != "ok" {
		t.Errorf("/healthz: %d %q, want 200 ok", resp.StatusCode, body)
	}

	proxyURL, _ := url.Parse("http://" + addr)
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL), DisableKeepAlives: true}, Timeout: 10 * time.Second}
	get := func() (int, string) {
		t.Helper()
		resp, err := client.Get(up.URL)
		if err != nil {
			t.Fatalf("GET %s through the proxy: %v", up.URL, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get(); code != 403 {
		t.Fatalf("before reload: status %d, want 403 under default deny", code)
	}

	if err := os.WriteFile(pol, []byte(fmt.Sprintf("default: deny\nallow: [%q]\n", upAddr)), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Signal(syscall.SIGHUP)
	reloaded, n := lines.wait(t, n, `SIGHUP: (reloaded policy .*|keeping .*)$`)
	if !strings.HasPrefix(reloaded, "reloaded policy") || !strings.Contains(reloaded, upAddr) {
		t.Fatalf("after SIGHUP: %q, want the reloaded policy allowing %s", reloaded, upAddr)
	}
	if code, b := get(); code != 200 || b != "upstream" {
		t.Fatalf("after reload: status %d %q, want 200 from the upstream", code, b)
	}

	if err := os.WriteFile(pol, []byte("defualt: deny\nallow: [10.0.0.1/8]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Signal(syscall.SIGHUP)
	why, n := lines.wait(t, n, `SIGHUP: (reloaded policy .*|keeping .*)$`)
	if !strings.HasPrefix(why, "keeping the policy in force") {
		t.Fatalf("after SIGHUP with a broken file: %q, want the old policy kept", why)
	}
	for _, want := range []string{`defualt: is not a policy key`, `did you mean "default"?`, `allow[0]:`} {
		lines.wait(t, n-1, regexp.QuoteMeta(want))
	}
	if code, _ := get(); code != 200 {
		t.Errorf("after a broken reload: status %d, want 200 under the policy kept", code)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-done
	if err := cmd.Wait(); err != nil {
		t.Errorf("dsh proxy after SIGTERM: %v", err)
	}
}
