package main

import (
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dsh-dev/dsh/workspace"
)

// addWorkspaceOwnerFlag registers --workspace-owner: who owns the files
// of the hosted workspaces (workspace.FileOwner).
func addWorkspaceOwnerFlag(cmd *cobra.Command) {
	cmd.Flags().String("workspace-owner", "", "with --http: the host UID:GID (numbers, not 0) that owns each new workspace's files, and so the uid its docker world runs as (default: dsh's own; a root-owned workspace needs an idmapped mount made on the host, which a dsh in a container cannot make), such as --workspace-owner 1000:1000")
}

// workspaceOwner is --workspace-owner, or nil.
func workspaceOwner(cmd *cobra.Command) (*workspace.FileOwner, error) {
	v, _ := cmd.Flags().GetString("workspace-owner")
	if v == "" {
		return nil, nil
	}
	u, g, ok := strings.Cut(v, ":")
	uid, err1 := strconv.Atoi(u)
	gid, err2 := strconv.Atoi(g)
	if !ok || err1 != nil || err2 != nil || uid <= 0 || gid <= 0 {
		return nil, exitf(2, "--workspace-owner %q: give the UID:GID of an unprivileged host user, numbers above 0 (such as 1000:1000); a docker world runs as it, and id 0 is the host's root", v)
	}
	return &workspace.FileOwner{UID: uid, GID: gid}, nil
}
