package proxy

import (
	"net"
	"syscall"
	"time"
	"unsafe"
)

// socketIdle reports how long the TCP connection c has carried no data in
// either direction, from the kernel's TCP_INFO timestamps (milliseconds
// since the last data segment sent and received).
func socketIdle(c net.Conn) (time.Duration, bool) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return 0, false
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return 0, false
	}
	var info syscall.TCPInfo
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		size := uint32(unsafe.Sizeof(info))
		_, _, errno = syscall.Syscall6(syscall.SYS_GETSOCKOPT, fd, syscall.IPPROTO_TCP, syscall.TCP_INFO,
			uintptr(unsafe.Pointer(&info)), uintptr(unsafe.Pointer(&size)), 0)
	}); err != nil || errno != 0 {
		return 0, false
	}
	ms := min(info.Last_data_sent, info.Last_data_recv)
	return time.Duration(ms) * time.Millisecond, true
}
