package sandbox

import (
	"errors"
	"net"
	"syscall"
)

// SendFDs sends data with the descriptors fds (SCM_RIGHTS) in one
// message on conn. The descriptors stay open on this side.
func SendFDs(conn *net.UnixConn, data []byte, fds ...int) error {
	var oob []byte
	if len(fds) > 0 {
		oob = syscall.UnixRights(fds...)
	}
	_, _, err := conn.WriteMsgUnix(data, oob, nil)
	return err
}

// ReceiveFDs reads one message into buf and returns its length with the
// descriptors that came with it (close-on-exec; the caller owns them).
// It accepts at most max descriptors: a message with more, or with
// control data it cannot parse, is an error, and every descriptor that
// came with it is closed.
func ReceiveFDs(conn *net.UnixConn, buf []byte, max int) (int, []int, error) {
	oob := make([]byte, syscall.CmsgSpace(4*(max+1)))
	n, oobn, flags, _, err := conn.ReadMsgUnix(buf, oob)
	if err != nil {
		return n, nil, err
	}
	msgs, perr := syscall.ParseSocketControlMessage(oob[:oobn])
	var fds []int
	for _, m := range msgs {
		got, _ := syscall.ParseUnixRights(&m)
		fds = append(fds, got...)
	}
	if perr != nil || flags&syscall.MSG_CTRUNC != 0 || len(fds) > max {
		CloseFDs(fds)
		return n, nil, errors.New("a message with more descriptors than expected or unreadable control data")
	}
	return n, fds, nil
}

// CloseFDs closes every descriptor of fds.
func CloseFDs(fds []int) {
	for _, fd := range fds {
		syscall.Close(fd)
	}
}
