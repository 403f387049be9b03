package main

import (
	"fmt"
	"os"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/skills"
)

// serveSkills is the skill discovery of dsh serve: the workspace's roots
// read through execworld.OpenFS (openat2 beneath the workspace, the reads
// of World.FS; .dsh/ and .agents/ are read-only in every world), the
// user's from the host. The returned func closes the workspace.
func serveSkills(workspace string) (*skills.Discoverer, func(), error) {
	wfs, err := execworld.OpenFS(workspace)
	if err != nil {
		return nil, nil, fmt.Errorf("opening workspace %s for its skills: %w", workspace, err)
	}
	home, _ := os.UserHomeDir()
	return skills.NewDiscoverer(skills.Config{Project: skills.WorldFS(wfs), Home: home}), func() { wfs.Close() }, nil
}
