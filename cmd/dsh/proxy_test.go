package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startDshProxy runs `dsh proxy args...` in-process on a unix socket in a
// temporary directory, with no configuration file, until the test ends.
func startDshProxy(t *testing.T, args ...string) (sock string) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir) // no user config file
	t.Chdir(dir)                     // no ./dsh.yaml
	sock = filepath.Join(dir, "egress.sock")
	ctx, cancel := context.WithCancel(context.Background())
	root := newRootCmd()
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	root.SetArgs(append([]string{"proxy", "--listen", "unix:" + sock}, args...))
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("dsh proxy after cancel: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("dsh proxy did not stop after its context was cancelled")
		}
	})
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			return sock
		}
		select {
		case err := <-done:
			t.Fatalf("dsh proxy exited: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("dsh proxy did not start listening")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func connectStatus(t *testing.T, sock, target string) (int, string) {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\n\r\n", target)
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "CONNECT"})
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("X-Dsh-Deny-Reason")
}

func loopbackListener(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return l.Addr().String()
}

func TestProxyCommandAllowsOnlyWhatItIsTold(t *testing.T) {
	allowed, other := loopbackListener(t), loopbackListener(t)
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	sock := startDshProxy(t, "--allow", allowed, "--audit", audit)

	if code, _ := connectStatus(t, sock, allowed); code != 200 {
		t.Errorf("CONNECT to the --allow entry %s: status %d, want 200", allowed, code)
	}
	if code, reason := connectStatus(t, sock, other); code != 403 || reason == "" {
		t.Errorf("CONNECT to %s, not allowed: status %d reason %q, want 403 with a reason", other, code, reason)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		data, _ := os.ReadFile(audit)
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		if len(lines) >= 2 {
			for _, l := range lines {
				var m map[string]any
				if err := json.Unmarshal([]byte(l), &m); err != nil {
					t.Errorf("audit line %q: %v", l, err)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("audit file has %q, want 2 JSON lines", data)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestProxyCommandDefaultsToSandboxPolicyDeny(t *testing.T) {
	up := loopbackListener(t)
	sock := startDshProxy(t)
	if code, _ := connectStatus(t, sock, up); code != 403 {
		t.Errorf("CONNECT %s with no policy configured: status %d, want 403 (sandbox egress default deny)", up, code)
	}
}

func TestProxyCommandRejectsBadInput(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Chdir(t.TempDir())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"proxy"}, "--listen"},
		{[]string{"proxy", "--listen", "3128"}, "host:port or unix:PATH"},
		{[]string{"proxy", "--listen", "unix:"}, "socket path"},
		{[]string{"proxy", "--listen", "127.0.0.1:0", "--allow", "10.0.0.0/33"}, "10.0.0.0/33"},
		{[]string{"proxy", "--listen", "127.0.0.1:0", "--audit", "/nonexistent/dir/audit.jsonl"}, "audit"},
	} {
		_, err := runDsh(t, tc.args...)
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(ee.msg, tc.want) {
			t.Errorf("dsh %s: %v, want exit 2 with a message naming %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}

// TestProxyCommandRefusesItsMetricsListener: even a policy that allows all
// of loopback cannot reach the proxy's own metrics endpoint through it.
func TestProxyCommandRefusesItsMetricsListener(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	metrics := l.Addr().String()
	l.Close()
	allowed := loopbackListener(t)
	sock := startDshProxy(t, "--allow", "127.0.0.0/8", "--metrics", metrics)
	if code, _ := connectStatus(t, sock, allowed); code != 200 {
		t.Fatalf("CONNECT to allowed %s: status %d, want 200", allowed, code)
	}
	if code, reason := connectStatus(t, sock, metrics); code != 403 {
		t.Errorf("CONNECT to the metrics listener %s: status %d (%s), want 403", metrics, code, reason)
	}
}
