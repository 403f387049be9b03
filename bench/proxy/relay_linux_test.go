package proxybench

import (
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// The kernel relay answers one question: how fast can *any* relay carry a
// tunnel on this machine? It moves bytes between its two sockets without
// ever waking up: an sk_skb verdict program hands each arriving segment
// straight to the other socket's send path (sockmap redirect). No
// user-space copy, no syscall and no scheduling per chunk is left, only
// the second TCP connection every relay has. If it is no faster than the
// proxy's splice path, the proxy's throughput is bound by that second
// connection, not by its code. It needs root (BPF); it is a measurement,
// never part of dsh.

const relayEnv = "DSH_PROXYBENCH_RELAY"

func init() { childMains[relayEnv] = runRelay }

// kernelRelay holds the sockhash and its verdict program.
type kernelRelay struct {
	peers *ebpf.Map
	prog  *ebpf.Program
}

// newKernelRelay loads the program: look up the socket stored under the
// receiving socket's cookie (its peer) and redirect the segment to it.
func newKernelRelay() (*kernelRelay, error) {
	peers, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.SockHash, KeySize: 8, ValueSize: 8, MaxEntries: 1024})
	if err != nil {
		return nil, fmt.Errorf("sockhash: %w", err)
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:       ebpf.SkSKB,
		AttachType: ebpf.AttachSkSKBStreamVerdict,
		License:    "GPL",
		Instructions: asm.Instructions{
			asm.Mov.Reg(asm.R6, asm.R1),
			asm.FnGetSocketCookie.Call(),
			asm.StoreMem(asm.RFP, -8, asm.R0, asm.DWord),
			asm.Mov.Reg(asm.R1, asm.R6),
			asm.LoadMapPtr(asm.R2, peers.FD()),
			asm.Mov.Reg(asm.R3, asm.RFP),
			asm.Add.Imm(asm.R3, -8),
			asm.Mov.Imm(asm.R4, 0),
			asm.FnSkRedirectHash.Call(),
			asm.Return(),
		},
	})
	if err != nil {
		peers.Close()
		return nil, fmt.Errorf("verdict program: %w", err)
	}
	err = link.RawAttachProgram(link.RawAttachProgramOptions{
		Target: peers.FD(), Program: prog, Attach: ebpf.AttachSkSKBStreamVerdict,
	})
	if err != nil {
		prog.Close()
		peers.Close()
		return nil, fmt.Errorf("attach verdict: %w", err)
	}
	return &kernelRelay{peers: peers, prog: prog}, nil
}

func sockFD(c *net.TCPConn) int {
	var fd int
	rc, _ := c.SyscallConn()
	rc.Control(func(f uintptr) { fd = int(f) })
	return fd
}

// pair joins a and b: from now on the kernel carries their bytes. Each is
// stored under the other's cookie, so the program finds the peer.
func (r *kernelRelay) pair(a, b *net.TCPConn) error {
	fa, fb := sockFD(a), sockFD(b)
	ca, err := unix.GetsockoptUint64(fa, unix.SOL_SOCKET, unix.SO_COOKIE)
	if err != nil {
		return err
	}
	cb, err := unix.GetsockoptUint64(fb, unix.SOL_SOCKET, unix.SO_COOKIE)
	if err != nil {
		return err
	}
	if err := r.peers.Put(ca, uint64(fb)); err != nil {
		return err
	}
	return r.peers.Put(cb, uint64(fa))
}

// halfClose waits for from's EOF (no byte reaches user space while the
// pair is redirected), then for to to have every byte from received
// acknowledged, and only then shuts down to's write side: a FIN sent
// earlier would cut off bytes still in the kernel's redirect queue.
func halfClose(from, to *net.TCPConn) {
	var one [1]byte
	from.Read(one[:])
	ff, ft := sockFD(from), sockFD(to)
	for {
		in, err1 := unix.GetsockoptTCPInfo(ff, unix.IPPROTO_TCP, unix.TCP_INFO)
		out, err2 := unix.GetsockoptTCPInfo(ft, unix.IPPROTO_TCP, unix.TCP_INFO)
		if err1 != nil || err2 != nil || out.Bytes_acked >= in.Bytes_received {
			break
		}
		time.Sleep(50 * time.Microsecond)
	}
	to.CloseWrite()
}

// runRelay is the relay process: it relays every connection to target and
// writes one byte to the client once the pair is joined, so the client
// never sends before the kernel path is in place.
func runRelay(target string) int {
	r, err := newKernelRelay()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				client := c.(*net.TCPConn)
				defer client.Close()
				up, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				upstream := up.(*net.TCPConn)
				defer upstream.Close()
				if err := r.pair(client, upstream); err != nil {
					fmt.Fprintln(os.Stderr, "relay:", err)
					return
				}
				client.Write([]byte{1})
				done := make(chan struct{})
				go func() { halfClose(upstream, client); close(done) }()
				halfClose(client, upstream)
				<-done
			}()
		}
	}()
	fmt.Println(l.Addr())
	io.Copy(io.Discard, os.Stdin)
	return 0
}

// BenchmarkTunnelBound carries the same bulk transfer to a sink three
// ways in turn — direct, through dsh's proxy (CONNECT, spliced), and
// through the kernel relay — and reports for each its rate, the median
// per-round ratio to direct, and the CPU the whole machine spent per MiB
// (every process and the kernel, from /proc/stat). The CPU figure bounds
// what a path can reach: with every core busy, no path moves more than
// cores / (CPU per MiB); "ceiling" is that bound as a ratio to direct.
func BenchmarkTunnelBound(b *testing.B) {
	const size = 32 << 20
	if os.Geteuid() != 0 {
		b.Skip("the kernel relay loads a BPF program: run as root")
	}
	sink := listenSink(b)
	proxy := startChild(b, sink)
	relay := startChildEnv(b, relayEnv+"="+sink)
	paths := []struct {
		name string
		dial func() net.Conn
		wall time.Duration
		cpu  time.Duration
		rel  []float64
	}{
		{name: "direct", dial: func() net.Conn {
			c, err := net.Dial("tcp", sink)
			if err != nil {
				b.Fatal(err)
			}
			return c
		}},
		{name: "proxy", dial: func() net.Conn { return connectVia(b, proxy.addr, sink) }},
		{name: "kernel-relay", dial: func() net.Conn {
			c, err := net.Dial("tcp", relay.addr)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
				b.Fatalf("relay: %v", err)
			}
			return c
		}},
	}
	b.SetBytes(int64(len(paths)) * size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var direct time.Duration
		for j := range paths {
			p := &paths[j]
			c := p.dial()
			cpu0 := machineBusy(b)
			d := transfer(b, c, size)
			p.cpu += machineBusy(b) - cpu0
			p.wall += d
			if j == 0 {
				direct = d
			}
			p.rel = append(p.rel, direct.Seconds()/d.Seconds())
		}
	}
	b.StopTimer()
	mb := float64(size) * float64(b.N) / (1 << 20)
	directRate := mb / paths[0].wall.Seconds()
	cores := float64(runtime.NumCPU())
	for _, p := range paths {
		cpuPerMiB := float64(p.cpu.Microseconds()) / 1000 / mb
		b.ReportMetric(mb/p.wall.Seconds(), p.name+"-MiB/s")
		b.ReportMetric(cpuPerMiB, p.name+"-machine-cpu-ms/MiB")
		if cpuPerMiB > 0 {
			b.ReportMetric(cores*1000/cpuPerMiB/directRate, p.name+"-ceiling")
		}
		if p.name != "direct" {
			slices.Sort(p.rel)
			b.ReportMetric(p.rel[len(p.rel)/2], p.name+"/direct")
		}
	}
}

// machineBusy is the CPU time all cores have spent outside idle and
// iowait since boot (the first line of /proc/stat, in USER_HZ ticks).
func machineBusy(b *testing.B) time.Duration {
	b.Helper()
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		b.Fatal(err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	var busy int64
	for i, f := range strings.Fields(line)[1:] {
		if i == 3 || i == 4 || i >= 8 { // idle, iowait; guest time is already in user
			continue
		}
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			b.Fatalf("/proc/stat: %v", err)
		}
		busy += n
	}
	return time.Duration(busy) * 10 * time.Millisecond
}
