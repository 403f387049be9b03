package docker

import (
	"context"
	"errors"
	"fmt"
	"slices"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
)

// Reap removes what a crashed dsh on this host left behind: containers and
// networks labelled dev.dsh.managed=true whose owner process is gone, and
// firewall rules of worlds whose network no longer exists. Resources of
// running dsh processes and of other hosts are left alone.
func (d *Driver) Reap(ctx context.Context) error {
	host := d.owner.host
	f := filters.NewArgs(filters.Arg("label", LabelManaged+"=true"))
	var errs []error
	cs, err := d.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return fmt.Errorf("docker: listing dsh containers: %w", err)
	}
	for _, c := range cs {
		if !ownerGone(c.Labels, host) {
			continue
		}
		d.log.Info("reaping container of a dead dsh", "container", c.ID[:12], "world", c.Labels[LabelWorld])
		if err := d.cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) {
			errs = append(errs, fmt.Errorf("removing container %s: %w", c.ID[:12], err))
		}
	}
	// Rules first: a rule is added only after its network exists, so every
	// rule listed here belongs to a network the listing below can see.
	ruled := uniq(ruleWorlds(ctx))
	ns, err := d.cli.NetworkList(ctx, network.ListOptions{Filters: f})
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("docker: listing dsh networks: %w", err))...)
	}
	live := map[string]bool{}
	for _, n := range ns {
		id := n.Labels[LabelWorld]
		if !ownerGone(n.Labels, host) {
			live[id] = true
			continue
		}
		d.log.Info("reaping network of a dead dsh", "network", n.Name, "world", id)
		if err := d.removeNetwork(ctx, n.ID); err != nil {
			errs = append(errs, err)
			live[id] = true // its rules must outlive it: still attached
		}
	}
	for _, id := range ruled {
		if live[id] {
			continue
		}
		if err := removeRules(ctx, id); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func uniq(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}
