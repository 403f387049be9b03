package docker

import (
	"debug/elf"
	"fmt"
	"os"
)

// checkStaticInit reports whether path is an executable ELF without a
// program interpreter. The init is bind-mounted into arbitrary images, and
// a FROM-scratch image has no dynamic loader, so a dynamic binary would
// fail to start inside the world with an unhelpful "no such file".
func checkStaticInit(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("docker: init binary: %w", err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("docker: init binary %s is not an executable file", path)
	}
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("docker: init binary %s is not an ELF executable: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%w: %s needs a dynamic loader; build dsh with CGO_ENABLED=0 (make build) and pass it as the init", ErrInitNotStatic, path)
		}
	}
	return nil
}
