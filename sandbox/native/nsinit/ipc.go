package nsinit

import (
	"fmt"
	"os"
	"sort"
	"strings"
)

// setIPC sets sysctls of the world's IPC namespace (kernel.shmall, …).
// Stage 1 is in that namespace, so /proc/sys/kernel writes its values,
// not the host's; the kernel lets the namespace's root write them.
func setIPC(sysctls map[string]string) error {
	keys := make([]string, 0, len(sysctls))
	for k := range sysctls {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !strings.HasPrefix(k, "kernel.shm") {
			return fmt.Errorf("setting %s: not a System V shared memory sysctl of the IPC namespace", k)
		}
		p := "/proc/sys/" + strings.ReplaceAll(k, ".", "/")
		if err := os.WriteFile(p, []byte(sysctls[k]), 0); err != nil {
			return fmt.Errorf("bounding the world's System V shared memory: setting %s=%s: %w", k, sysctls[k], err)
		}
	}
	return nil
}
