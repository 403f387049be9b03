// Package proxybench measures dsh's egress proxy against a direct loopback
// connection in the same run: CONNECT tunnel throughput, the latency a
// forwarded request adds, and the memory of 1,000 open tunnels. The proxy
// runs in a child process (this test binary, re-executed), as it does in
// deployment, so its RSS is its own.
//
//	go test -run '^$' -bench . -benchtime 3x ./bench/proxy
//
// Results are in docs/BENCHMARKS.md.
package proxybench
