package native

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/dsh-dev/dsh/sandbox"
	"github.com/dsh-dev/dsh/sandbox/native/nsinit"
	"golang.org/x/sys/unix"
)

// recvUpper reads the overlay's upper tmpfs from the sync channel: one
// nsinit.UpperMsg byte with one descriptor. The init sent it before it
// reported readiness, so it is there or the init failed.
func recvUpper(sync *os.File) (*os.File, error) {
	var b [1]byte
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(int(sync.Fd()), b[:], oob, unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
	if err != nil || n != 1 || b[0] != nsinit.UpperMsg {
		return nil, fmt.Errorf("native: the init reported ready without handing over the overlay's upper layer (%v)", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("native: reading the overlay's upper layer: %v", err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		closeFDs(fds)
		return nil, fmt.Errorf("native: reading the overlay's upper layer: %v", err)
	}
	return os.NewFile(uintptr(fds[0]), "overlay-upper"), nil
}

// FreezeUpper kills every process of an overlay world and returns its
// upper layer, a path through dsh's descriptor of the upper tmpfs (which
// no mount namespace has attached): readable until Close
// (sandbox.Overlay).
func (in *instance) FreezeUpper() (string, error) {
	in.freezeOnce.Do(func() {
		if in.l.upper == nil {
			in.freezeErr = errors.New("native: the world's workspace is not an overlay (Spec.WorkspaceMode " + string(sandbox.WorkspaceOverlay) + ")")
			return
		}
		in.mu.Lock()
		in.closed = true
		in.mu.Unlock()
		in.stop()
		in.upper = "/proc/self/fd/" + strconv.Itoa(int(in.l.upper.Fd())) + "/upper"
	})
	return in.upper, in.freezeErr
}
