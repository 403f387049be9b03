package main

import (
	"bufio"
	"fmt"
	"io/fs"
	"net"
	"path/filepath"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// unixDial connects to each unix socket path ("@name" is an abstract
// socket) and reads what the listener says.
func unixDial(paths []string) {
	for _, p := range paths {
		c, err := net.DialTimeout("unix", p, 3*time.Second)
		if err != nil {
			fmt.Printf("refused %s %v\n", p, oneLine(err))
			continue
		}
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		b := make([]byte, 64)
		n, _ := c.Read(b)
		c.Close()
		fmt.Printf("connected %s %q\n", p, b[:n])
	}
}

// unixSelf makes a unix socket at path, connects to it and passes a
// line through: what a program that uses unix sockets for itself does.
func unixSelf(path string) {
	l, err := net.Listen("unix", path)
	if err != nil {
		fmt.Printf("unavailable listen %v\n", oneLine(err))
		return
	}
	defer l.Close()
	go func() {
		if c, err := l.Accept(); err == nil {
			c.Write([]byte("self\n"))
			c.Close()
		}
	}()
	c, err := net.Dial("unix", path)
	if err != nil {
		fmt.Printf("unavailable dial %v\n", oneLine(err))
		return
	}
	defer c.Close()
	line, err := bufio.NewReader(c).ReadString('\n')
	fmt.Printf("works %q %v\n", line, err)
}

// sockScan walks dirs (bounded) for socket files and connects to every
// one it finds. It sends nothing, so a socket of the host's that answers
// (the unconfined host driver's case) gets no input it might act on.
func sockScan(dirs []string) {
	skip := map[string]bool{"/proc": true, "/sys": true, "/usr": true, "/lib": true, "/lib32": true,
		"/lib64": true, "/libx32": true, "/bin": true, "/sbin": true, "/boot": true, "/snap": true}
	seen := map[string]bool{}
	deadline := time.Now().Add(10 * time.Second)
	for _, d := range dirs {
		budget := 50000 // entries per directory tree
		filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			budget--
			if budget < 0 || time.Now().After(deadline) {
				return filepath.SkipAll
			}
			if err != nil {
				return nil
			}
			if e.IsDir() && skip[p] {
				return filepath.SkipDir
			}
			if e.Type()&fs.ModeSocket == 0 || seen[p] {
				return nil
			}
			seen[p] = true
			c, err := net.DialTimeout("unix", p, time.Second)
			if err != nil {
				fmt.Printf("refused %s %v\n", p, oneLine(err))
				return nil
			}
			c.Close()
			fmt.Printf("connected %s\n", p)
			return nil
		})
	}
	fmt.Printf("scanned %d\n", len(seen))
}

// families tries each socket family (and a few protocols and socket
// pair types) and prints "allowed NAME" or "denied NAME errno".
func families() {
	try := func(name string, fn func() (int, error)) {
		fd, err := fn()
		if err != nil {
			fmt.Printf("denied %s %v\n", name, oneLine(err))
			return
		}
		unix.Close(fd)
		fmt.Printf("allowed %s\n", name)
	}
	sock := func(domain, typ, proto int) func() (int, error) {
		return func() (int, error) { return unix.Socket(domain, typ|unix.SOCK_CLOEXEC, proto) }
	}
	pair := func(typ int) func() (int, error) {
		return func() (int, error) {
			fds, err := unix.Socketpair(unix.AF_UNIX, typ|unix.SOCK_CLOEXEC, 0)
			if err == nil {
				unix.Close(fds[1])
			}
			return fds[0], err
		}
	}
	for _, f := range []struct {
		name        string
		domain, typ int
		proto       int
	}{
		{"inet", unix.AF_INET, unix.SOCK_STREAM, 0},
		{"inet6", unix.AF_INET6, unix.SOCK_STREAM, 0},
		{"netlink-route", unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE},
		{"unix", unix.AF_UNIX, unix.SOCK_STREAM, 0},
		{"netlink-uevent", unix.AF_NETLINK, unix.SOCK_DGRAM, unix.NETLINK_KOBJECT_UEVENT},
		{"netlink-audit", unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_AUDIT},
		{"netlink-sock-diag", unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_SOCK_DIAG},
		{"vsock", unix.AF_VSOCK, unix.SOCK_STREAM, 0},
		{"packet", unix.AF_PACKET, unix.SOCK_RAW, 0},
		{"alg", unix.AF_ALG, unix.SOCK_SEQPACKET, 0},
		{"key", unix.AF_KEY, unix.SOCK_RAW, 2},
		{"tipc", unix.AF_TIPC, unix.SOCK_RDM, 0},
		{"can", unix.AF_CAN, unix.SOCK_RAW, 1},
		{"bluetooth", unix.AF_BLUETOOTH, unix.SOCK_RAW, 0},
		{"xdp", unix.AF_XDP, unix.SOCK_RAW, 0},
		{"rds", unix.AF_RDS, unix.SOCK_SEQPACKET, 0},
		{"kcm", unix.AF_KCM, unix.SOCK_DGRAM, 0},
		{"qipcrtr", unix.AF_QIPCRTR, unix.SOCK_DGRAM, 0},
		{"smc", unix.AF_SMC, unix.SOCK_STREAM, 0},
		{"mctp", unix.AF_MCTP, unix.SOCK_DGRAM, 0},
		{"x25", unix.AF_X25, unix.SOCK_SEQPACKET, 0},
		{"ax25", unix.AF_AX25, unix.SOCK_SEQPACKET, 0},
		{"appletalk", unix.AF_APPLETALK, unix.SOCK_DGRAM, 0},
		{"llc", unix.AF_LLC, unix.SOCK_DGRAM, 0},
		{"pppox", unix.AF_PPPOX, unix.SOCK_STREAM, 0},
		{"nfc", unix.AF_NFC, unix.SOCK_SEQPACKET, 0},
	} {
		try(f.name, sock(f.domain, f.typ, f.proto))
	}
	try("socketpair-stream", pair(unix.SOCK_STREAM))
	try("socketpair-seqpacket", pair(unix.SOCK_SEQPACKET))
	try("socketpair-dgram", pair(unix.SOCK_DGRAM))
	try("io_uring", func() (int, error) {
		var params [120]byte
		r, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params[0])), 0)
		if e != 0 {
			return -1, e
		}
		return int(r), nil
	})
}
