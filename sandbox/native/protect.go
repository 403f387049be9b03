package native

import "github.com/dsh-dev/dsh/sandbox"

// protect prepares the workspace's protected paths on the host
// (sandbox.PrepareProtected): the init binds them, and the placeholders
// it made are removed once the init and every process of the world are
// gone (the undo runs after the kill, which a later step pushes). Each
// placeholder is recorded in a journal beside the world's state first,
// so the next start removes those of a dsh that dies before its close.
func (s *starting) protect() error {
	// A dead dsh's placeholders go first: left in this workspace, they
	// would read below as the user's own paths, which no world removes.
	// (Driver.Reap reports what it cannot remove.)
	_, _ = reapPlaceholders(s.base)
	// Unmapped (an unprivileged caller), the world writes with the
	// caller's own ids and no capability.
	prot, err := sandbox.PrepareProtected(s.ws, s.protected, s.cfg.Masks, !s.mapped, journalPath(s.base, s.l.id))
	if err != nil {
		return invalid(err)
	}
	s.l.undo.push(func() { _ = prot.Close() })
	s.cfg.Protected = prot.Mounts
	return nil
}
