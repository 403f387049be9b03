package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/dsh-dev/dsh/sandbox"
)

// Reap removes what a crashed dsh on this host left behind: containers
// labelled dev.dsh.managed=true whose owner process is gone. (A world's
// container removes itself when its init loses dsh's connection; Reap
// catches the rest, such as a container created but never started.)
// Containers of running dsh processes and of other hosts are left alone.
// Host files of worlds whose container is gone (resolv.conf, the egress
// socket) are removed too, once they are old enough not to belong to a
// world another dsh is opening right now, and the placeholders dead
// owners' worlds made in their workspaces.
func (d *Driver) Reap(ctx context.Context) error {
	f := filters.NewArgs(filters.Arg("label", sandbox.LabelManaged+"=true"))
	cs, err := d.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return fmt.Errorf("docker: listing dsh containers: %w", err)
	}
	var errs []error
	live := map[string]bool{}
	for _, c := range cs {
		live[c.Labels[sandbox.LabelWorld]] = !ownerGone(c.Labels, d.owner.host)
	}
	for _, c := range cs {
		if !ownerGone(c.Labels, d.owner.host) {
			continue
		}
		d.log.Info("reaping container of a dead dsh", "container", c.ID[:12], "world", c.Labels[sandbox.LabelWorld])
		if err := d.cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) {
			errs = append(errs, fmt.Errorf("docker: removing container %s: %w", c.ID[:12], err))
		}
	}
	// Their containers gone, the placeholders they bound go too.
	if jdir, err := journalDir(); err != nil {
		errs = append(errs, err)
	} else if err := reapPlaceholders(jdir, d.owner.host); err != nil {
		errs = append(errs, err)
	}
	if err := reapHostFiles(os.TempDir(), live, time.Now().Add(-hostFilesGrace)); err != nil {
		errs = append(errs, err)
	}
	if err := reapMapped(MappedDir, live, time.Now().Add(-hostFilesGrace)); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// hostFilesGrace is how old a world's host directory must be before Reap
// may remove it: Open makes the directory before the container.
const hostFilesGrace = 10 * time.Minute

// reapHostFiles removes dsh-world-<id>-* directories in dir whose world
// has no live container and that were last changed before cutoff.
func reapHostFiles(dir string, live map[string]bool, cutoff time.Time) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var errs []error
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "dsh-world-")
		if !ok || !e.IsDir() {
			continue
		}
		id, _, _ := strings.Cut(rest, "-")
		if live[id] {
			continue
		}
		fi, err := e.Info()
		if err != nil || fi.ModTime().After(cutoff) {
			continue
		}
		if err := unmountLeftOverlay(filepath.Join(dir, e.Name())); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			errs = append(errs, fmt.Errorf("docker: removing host files of world %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}
