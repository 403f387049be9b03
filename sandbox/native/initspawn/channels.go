package initspawn

import (
	"os"
	"syscall"
)

// Channels are what an init inherits beside its binary: the sync socket
// (the ids byte, then the release with the configuration and mounts),
// the ready pipe, the egress broker socket (always there: a world
// without egress closes it) and, for a serving init, the stdio socket and
// the pid1 session's pipes. The fields are dsh's ends; Child the init's.
type Channels struct {
	Sync, Ready, Broker *os.File
	Stdio, CtlW, CtlR   *os.File // serving only
	// Child are the init's ends: sync, ready, broker[, stdio, the
	// session's stdin, its stdout].
	Child []*os.File
}

// NewChannels makes the channels of an init, a serving one or not.
func NewChannels(serve bool) (*Channels, error) {
	c := &Channels{}
	var err error
	// ends makes one channel: dsh's end and the init's.
	ends := func(make func() (*os.File, *os.File, error)) *os.File {
		if err != nil {
			return nil
		}
		var ours, theirs *os.File
		if ours, theirs, err = make(); err == nil {
			c.Child = append(c.Child, theirs)
		}
		return ours
	}
	pair := func(typ int, name string) func() (*os.File, *os.File, error) {
		return func() (*os.File, *os.File, error) {
			fds, err := syscall.Socketpair(syscall.AF_UNIX, typ|syscall.SOCK_CLOEXEC, 0)
			if err != nil {
				return nil, nil, wrap("native: "+name+" socket", err)
			}
			return os.NewFile(uintptr(fds[0]), name), os.NewFile(uintptr(fds[1]), name+" (init)"), nil
		}
	}
	reader := func() (*os.File, *os.File, error) { return os.Pipe() }
	writer := func() (*os.File, *os.File, error) { r, w, err := os.Pipe(); return w, r, err }
	c.Sync = ends(pair(syscall.SOCK_SEQPACKET, "sync"))
	c.Ready = ends(reader)
	c.Broker = ends(pair(syscall.SOCK_STREAM, "egress broker"))
	if serve {
		c.Stdio = ends(pair(syscall.SOCK_SEQPACKET, "stdio"))
		c.CtlW = ends(writer) // the session: dsh writes the init's stdin
		c.CtlR = ends(reader) // and reads its stdout
	}
	if err != nil {
		c.CloseChild()
		c.Close()
		return nil, err
	}
	return c, nil
}

// ExtraFiles are the init's descriptors from FDSync on, exe its binary.
func (c *Channels) ExtraFiles(exe *os.File) []*os.File {
	files := []*os.File{c.Child[0], c.Child[1], exe, c.Child[2]} // FDSync, FDReady, FDExe, FDBroker
	if len(c.Child) > 3 {
		files = append(files, c.Child[3]) // FDStdio
	}
	return files
}

// Session is a serving init's stdin and stdout: the pid1 session.
func (c *Channels) Session() (stdin, stdout *os.File) { return c.Child[4], c.Child[5] }

// CloseChild closes the init's ends, once it holds them (or never will).
func (c *Channels) CloseChild() {
	closeFiles(c.Child)
	c.Child = nil
}

// Close closes dsh's ends.
func (c *Channels) Close() {
	for _, f := range []*os.File{c.Sync, c.Ready, c.Broker, c.Stdio, c.CtlW, c.CtlR} {
		f.Close() // nil-safe
	}
}
