package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/sandbox/docker"
	"github.com/dsh-dev/dsh/workspace"
)

// A root dsh serve on the host: without --workspace-owner a workspace's
// files are root's and its docker world runs as the docker driver's
// MappedUID over an idmapped mount; with it, the files are the owner's
// and the world runs as the owner, with no idmapped mount (which a dsh
// in a container cannot make). Never as root either way.
func TestServeWorkspaceOwnerDocker(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireDocker(t)
	for _, tc := range []struct {
		name     string
		args     []string
		fileUID  int
		worldUID int
	}{
		{"default", nil, 0, docker.MappedUID},
		{"owner", []string{"--workspace-owner", "4242:4343"}, 4242, 4242},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startWorkspaceServe(t, t.TempDir(), tc.args...)
			var c workspace.Created
			s.must(t, 201, &c, wsServerToken, "POST", "/v1/workspaces", map[string]any{"name": "own", "driver": "docker"})
			out, code := s.exec(t, c.Token, "own", "sh", "-c", "id -u; echo x > made-in-the-world; stat -c %u made-in-the-world")
			if code != 0 {
				t.Fatalf("exec: exit %d: %s", code, out)
			}
			// In the world, the files' owner shows as the world's own id
			// (idmapped: on-disk 0 is MappedUID); on disk, the new file is
			// the files' owner's.
			if want := fmt.Sprintf("%d\n%d\n", tc.worldUID, tc.worldUID); out != want {
				t.Errorf("the world's uid and its new file's owner: %q, want %q", out, want)
			}
			files := s.filesDir(t, "made-in-the-world")
			for _, p := range []string{files, filepath.Join(files, "made-in-the-world")} {
				fi, err := os.Stat(p)
				if err != nil {
					t.Fatal(err)
				}
				if uid := int(fi.Sys().(*syscall.Stat_t).Uid); uid != tc.fileUID {
					t.Errorf("%s belongs to uid %d on disk, want %d", p, uid, tc.fileUID)
				}
			}
			rec, err := os.Stat(filepath.Join(filepath.Dir(files), "workspace.json"))
			if err != nil || rec.Sys().(*syscall.Stat_t).Uid != 0 || rec.Mode().Perm() != 0o600 {
				t.Errorf("workspace.json: %v %v, want root's, 0600", rec, err)
			}
		})
	}
}
