package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/workspace"
)

// The state root is dsh's, under a system location as for root
// (/var/lib/dsh/workspaces): the server makes its missing parents, a
// root dsh's worlds (mapped to unprivileged ids) can still be opened over
// workspaces beneath it, and no workspace's world sees another's files or
// records.
func TestServeWorkspacesStateRootHidden(t *testing.T) {
	for _, driver := range []string{"native", "docker"} {
		t.Run(driver, func(t *testing.T) {
			if driver == "native" {
				requireNativeServe(t)
				testenv.RequireRoot(t)
			} else {
				testenv.RequireDocker(t)
			}
			base, err := os.MkdirTemp("/var/tmp", "dsh-wsroot-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(base) })
			os.Chmod(base, 0o755)
			root := filepath.Join(base, "lib", "dsh", "workspaces") // parents made by the server
			s := startWorkspaceServe(t, root)
			var alice, bob workspace.Created
			s.must(t, 201, &alice, wsServerToken, "POST", "/v1/workspaces", map[string]any{"name": "alice", "driver": driver})
			s.must(t, 201, &bob, wsServerToken, "POST", "/v1/workspaces", map[string]any{"name": "bob", "driver": driver})
			s.must(t, 204, nil, bob.Token, "PUT", "/v1/workspaces/bob/files/secret.txt", []byte("bob's secret\n"))
			if out, code := s.exec(t, alice.Token, "alice", "sh", "-c", "echo ok > mine && cat mine"); code != 0 || out != "ok\n" {
				t.Fatalf("alice's world: %q, exit %d", out, code)
			}
			out, _ := s.exec(t, alice.Token, "alice", "sh", "-c", "cat "+root+"/w-*/files/secret.txt "+root+"/w-*/workspace.json 2>&1; ls -a "+root+" 2>&1")
			if strings.Contains(out, "bob's secret") || strings.Contains(out, "token_sha256") {
				t.Errorf("alice's world reads the state root:\n%s", out)
			}
		})
	}
}
