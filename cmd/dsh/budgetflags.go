package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dsh-dev/dsh/internal/config"
	"github.com/dsh-dev/dsh/sandbox"
)

// addBudgetFlags registers --write-limit, the world's write budget
// (sandbox.limits.write).
func addBudgetFlags(cmd *cobra.Command) {
	cmd.Flags().String("write-limit", "", "write budget, such as 1GiB (at least 1MiB), or unlimited: no file grows past it (EFBIG) and /tmp and /dev/shm hold no more together (default 4GiB)")
	bindConfigFlag(cmd, "write-limit", "sandbox.limits.write")
}

// applyWriteLimit sets the Spec's write budget from sandbox.limits.write
// (validated by loadConfig). It needs no cgroup, so it holds with limits
// off too.
func applyWriteLimit(spec *sandbox.Spec, lim config.Limits) error {
	n, err := config.WriteLimit(lim.Write)
	if err != nil {
		return fmt.Errorf("--write-limit / sandbox.limits.write: %w", err)
	}
	spec.WriteLimit = n
	return nil
}
