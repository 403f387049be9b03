package proxybench

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/netpolicy"
	"github.com/dsh-dev/dsh/netpolicy/proxy"
)

// Every byte here travels over loopback between listeners this binary
// starts: a sink, an echo server, an httptest server and the proxy child.

const childEnv = "DSH_PROXYBENCH_CHILD"

// childMains are the other processes this binary can be re-executed as,
// by the environment variable that selects them and carries their argument.
var childMains = map[string]func(arg string) int{}

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(runChild())
	}
	for env, main := range childMains {
		if arg := os.Getenv(env); arg != "" {
			os.Exit(main(arg))
		}
	}
	os.Exit(m.Run())
}

// runChild is the proxy process: it serves a Proxy on a loopback port
// allowing the entries in DSH_PROXYBENCH_ALLOW, prints the address, and
// exits when its stdin closes.
func runChild() int {
	pol, err := netpolicy.New(netpolicy.Config{Allow: strings.Split(os.Getenv("DSH_PROXYBENCH_ALLOW"), ",")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	p := proxy.New(&netpolicy.Dialer{Policy: pol}, &proxy.Options{World: "bench", MaxConnsPerWorld: 4096})
	go p.Serve(l)
	fmt.Println(l.Addr())
	io.Copy(io.Discard, os.Stdin)
	p.Close()
	return 0
}

type child struct {
	addr string
	pid  int
}

// startChild runs the proxy in a child process allowing allow.
func startChild(b *testing.B, allow ...string) child {
	b.Helper()
	return startChildEnv(b, childEnv+"=1", "DSH_PROXYBENCH_ALLOW="+strings.Join(allow, ","))
}

// startChildEnv re-executes this binary with env added, reads the address
// the child prints, and stops the child (closing its stdin) at cleanup.
func startChildEnv(b *testing.B, env ...string) child {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("proxy child: %v", err)
	}
	return child{addr: strings.TrimSpace(line), pid: cmd.Process.Pid}
}

// cpuTime is the user+system CPU time process pid has used.
func cpuTime(b *testing.B, pid int) time.Duration {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command name (which may hold spaces): state is
	// field 3, utime 14, stime 15, in clock ticks (100 per second on Linux).
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// rssBytes reads the resident set size of process pid.
func rssBytes(b *testing.B, pid int) float64 {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb * 1024
		}
	}
	b.Fatal("no VmRSS")
	return 0
}

func listen(b *testing.B, serve func(net.Conn)) string {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); serve(c) }()
		}
	}()
	return l.Addr().String()
}

// listenSink serves a sink that reads and drops everything, and closes
// at EOF.
func listenSink(b *testing.B) string {
	return listen(b, func(c net.Conn) {
		buf := make([]byte, 256<<10)
		for {
			if _, err := c.Read(buf); err != nil {
				return
			}
		}
	})
}

// transfer writes size bytes to a sink over c, half-closes it, and
// returns how long it took until the sink had them all (it closes at EOF).
func transfer(b *testing.B, c net.Conn, size int) time.Duration {
	b.Helper()
	defer c.Close()
	buf := make([]byte, 256<<10)
	start := time.Now()
	for sent := 0; sent < size; sent += len(buf) {
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	c.(*net.TCPConn).CloseWrite()
	if _, err := c.Read(buf[:1]); err != io.EOF {
		b.Fatalf("waiting for the sink to finish: %v", err)
	}
	return time.Since(start)
}

// connectVia opens a CONNECT tunnel to target through the proxy.
func connectVia(b *testing.B, proxy, target string) net.Conn {
	b.Helper()
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		b.Fatal(err)
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	// Read the 200 byte by byte so no tunnel byte is left in a buffer.
	var head []byte
	one := make([]byte, 1)
	for !strings.HasSuffix(string(head), "\r\n\r\n") {
		if _, err := c.Read(one); err != nil {
			b.Fatalf("CONNECT %s: %v after %q", target, err, head)
		}
		head = append(head, one[0])
	}
	if !strings.HasPrefix(string(head), "HTTP/1.1 200") {
		b.Fatalf("CONNECT %s: %q", target, head)
	}
	return c
}

// BenchmarkConnectThroughput sends the same bulk transfer to a sink over
// a direct loopback connection and through a CONNECT tunnel, in
// alternating pairs so that both see the same machine load, and reports
// both rates, the median of the per-pair ratios, and the CPU each path
// costs per MiB.
func BenchmarkConnectThroughput(b *testing.B) {
	const (
		size  = 32 << 20
		pairs = 8 // per iteration
	)
	sink := listenSink(b)
	proxy := startChild(b, sink)
	transfer := func(c net.Conn) time.Duration { return transfer(b, c, size) }
	var direct, proxied, endpointsCPU time.Duration
	var ratios []float64
	cpu0 := cpuTime(b, proxy.pid)
	b.SetBytes(2 * pairs * size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for range pairs {
			dc, err := net.Dial("tcp", sink)
			if err != nil {
				b.Fatal(err)
			}
			self0 := cpuTime(b, os.Getpid())
			d := transfer(dc)
			endpointsCPU += cpuTime(b, os.Getpid()) - self0
			p := transfer(connectVia(b, proxy.addr, sink))
			direct += d
			proxied += p
			ratios = append(ratios, d.Seconds()/p.Seconds())
		}
	}
	b.StopTimer()
	proxyCPU := cpuTime(b, proxy.pid) - cpu0
	slices.Sort(ratios)
	mb := float64(size) * float64(len(ratios)) / (1 << 20)
	b.ReportMetric(mb/direct.Seconds(), "direct-MiB/s")
	b.ReportMetric(mb/proxied.Seconds(), "proxy-MiB/s")
	b.ReportMetric(ratios[len(ratios)/2], "proxy/direct")
	// Where the time goes on a CPU-bound box: the proxy process's CPU
	// per MiB beside the CPU of both endpoints of a direct transfer
	// (clock-tick resolution, so only meaningful over many MiB).
	b.ReportMetric(float64(proxyCPU.Microseconds())/1000/mb, "proxy-cpu-ms/MiB")
	b.ReportMetric(float64(endpointsCPU.Microseconds())/1000/mb, "direct-endpoints-cpu-ms/MiB")
}

// BenchmarkForwardLatency times small GETs to a loopback HTTP server
// directly and as absolute-form requests through the proxy, alternately,
// over kept-alive connections, and reports the p50 of each and the
// difference.
func BenchmarkForwardLatency(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	b.Cleanup(up.Close)
	proxy := startChild(b, up.Listener.Addr().String())
	purl, _ := url.Parse("http://" + proxy.addr)
	direct := &http.Client{Transport: &http.Transport{Proxy: nil}}
	via := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(purl)}}
	get := func(c *http.Client) time.Duration {
		start := time.Now()
		resp, err := c.Get(up.URL + "/x")
		if err != nil {
			b.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(body) != "ok" {
			b.Fatalf("GET: %q %v", body, err)
		}
		return time.Since(start)
	}
	for range 200 { // warm both paths: connections, pools, caches
		get(direct)
		get(via)
	}
	n := max(b.N, 2000)
	ds, ps := make([]time.Duration, 0, n), make([]time.Duration, 0, n)
	cpu0 := cpuTime(b, proxy.pid)
	b.ResetTimer()
	for i := 0; i < n; i++ {
		ds = append(ds, get(direct))
		ps = append(ps, get(via))
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime(b, proxy.pid)-cpu0).Microseconds())/float64(n), "proxy-cpu-us/req")
	slices.Sort(ds)
	slices.Sort(ps)
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }
	b.ReportMetric(us(ds[n/2]), "direct-p50-us")
	b.ReportMetric(us(ps[n/2]), "proxy-p50-us")
	b.ReportMetric(us(ps[n/2]-ds[n/2]), "added-p50-us")
	b.ReportMetric(us(ps[n*9/10]-ds[n*9/10]), "added-p90-us")
}

// BenchmarkHold1000Tunnels opens 1,000 CONNECT tunnels to an echo server
// and keeps them open, then reports the proxy process's RSS beside its
// RSS before the first tunnel (the baseline), and times a round of one
// echoed byte on every tunnel against the same round over 1,000 direct
// connections.
func BenchmarkHold1000Tunnels(b *testing.B) {
	const n = 1000
	echo := listen(b, func(c net.Conn) { io.Copy(c, c) })
	proxy := startChild(b, echo)
	time.Sleep(200 * time.Millisecond)
	idle := rssBytes(b, proxy.pid)

	tunnels := make([]net.Conn, n)
	directs := make([]net.Conn, n)
	for i := range n {
		tunnels[i] = connectVia(b, proxy.addr, echo)
		c, err := net.Dial("tcp", echo)
		if err != nil {
			b.Fatal(err)
		}
		directs[i] = c
	}
	b.Cleanup(func() {
		for i := range n {
			tunnels[i].Close()
			directs[i].Close()
		}
	})
	one := []byte{'x'}
	round := func(cs []net.Conn) time.Duration {
		start := time.Now()
		for _, c := range cs {
			if _, err := c.Write(one); err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(c, one); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	round(tunnels)
	round(directs)
	var dt, pt time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dt += round(directs)
		pt += round(tunnels)
	}
	b.StopTimer()
	time.Sleep(200 * time.Millisecond)
	held := rssBytes(b, proxy.pid)
	const mib = 1 << 20
	b.ReportMetric(idle/mib, "idle-rss-MiB")
	b.ReportMetric(held/mib, "rss-MiB")
	b.ReportMetric((held-idle)/n/1024, "KiB/tunnel")
	b.ReportMetric(float64(dt.Microseconds())/float64(b.N), "direct-round-us")
	b.ReportMetric(float64(pt.Microseconds())/float64(b.N), "proxy-round-us")
}
