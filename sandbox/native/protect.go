package native

import "github.com/dsh-dev/dsh/sandbox"

// protect prepares the workspace's protected paths on the host
// (sandbox.PrepareProtected): the init binds them, and the placeholders
// it made are removed once the init and every process of the world are
// gone (the undo runs after the kill, which a later step pushes).
func (s *starting) protect() error {
	// Unmapped (an unprivileged caller), the world writes with the
	// caller's own ids and no capability.
	prot, err := sandbox.PrepareProtected(s.ws, s.protected, s.cfg.Masks, !s.mapped)
	if err != nil {
		return invalid(err)
	}
	s.l.undo.push(func() { _ = prot.Close() })
	s.cfg.Protected = prot.Mounts
	return nil
}
