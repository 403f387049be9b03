package docker

import (
	"context"
	"errors"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
)

// Reap removes what a crashed dsh on this host left behind: containers
// labelled dev.dsh.managed=true whose owner process is gone. (A world's
// container removes itself when its init loses dsh's connection; Reap
// catches the rest, such as a container created but never started.)
// Containers of running dsh processes and of other hosts are left alone.
// The host files of a dead world live in the system temp directory and
// are left to its cleaning.
func (d *Driver) Reap(ctx context.Context) error {
	f := filters.NewArgs(filters.Arg("label", LabelManaged+"=true"))
	cs, err := d.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return fmt.Errorf("docker: listing dsh containers: %w", err)
	}
	var errs []error
	for _, c := range cs {
		if !ownerGone(c.Labels, d.owner.host) {
			continue
		}
		d.log.Info("reaping container of a dead dsh", "container", c.ID[:12], "world", c.Labels[LabelWorld])
		if err := d.cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) {
			errs = append(errs, fmt.Errorf("docker: removing container %s: %w", c.ID[:12], err))
		}
	}
	return errors.Join(errs...)
}
