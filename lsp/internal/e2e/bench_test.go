package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/lsp"
)

// direct is the baseline: a minimal JSON-RPC client talking to gopls on
// the host, with no world, no queue and no conversion.
type direct struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	nextID int
}

func startDirect(b testing.TB, gopls, ws string) *direct {
	b.Helper()
	cmd := exec.Command(gopls)
	cmd.Dir = ws
	cmd.Env = []string{"PATH=/usr/local/go/bin:/usr/bin:/bin", "HOME=" + b.TempDir(), "GOPROXY=off", "GOFLAGS=",
		"GOTOOLCHAIN=local", "GOTELEMETRY=off", "GOCACHE=" + b.TempDir(), "GOPATH=" + b.TempDir()}
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	d := &direct{cmd: cmd, in: in, out: bufio.NewReader(out)}
	root := "file://" + ws
	d.call(b, "initialize", map[string]any{"processId": nil, "rootUri": root,
		"workspaceFolders": []any{map[string]string{"uri": root, "name": "workspace"}},
		"capabilities":     map[string]any{"workspace": map[string]any{"configuration": true}}})
	d.send(b, map[string]any{"jsonrpc": "2.0", "method": "initialized", "params": map[string]any{}})
	return d
}

func (d *direct) send(b testing.TB, v any) {
	body, _ := json.Marshal(v)
	if _, err := fmt.Fprintf(d.in, "Content-Length: %d\r\n\r\n%s", len(body), body); err != nil {
		b.Fatal(err)
	}
}

func (d *direct) read(b testing.TB) map[string]json.RawMessage {
	n := 0
	for {
		line, err := d.out.ReadString('\n')
		if err != nil {
			b.Fatal(err)
		}
		line = strings.TrimSpace(line)
		if line == "" {
			break
		}
		if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
			n, _ = strconv.Atoi(v)
		}
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(d.out, body); err != nil {
		b.Fatal(err)
	}
	var m map[string]json.RawMessage
	json.Unmarshal(body, &m)
	return m
}

// call sends a request and reads until its answer, answering the
// server's own requests on the way.
func (d *direct) call(b testing.TB, method string, params any) json.RawMessage {
	d.nextID++
	id := strconv.Itoa(d.nextID)
	d.send(b, map[string]any{"jsonrpc": "2.0", "id": d.nextID, "method": method, "params": params})
	for {
		m := d.read(b)
		if _, isReq := m["method"]; isReq {
			if rid, ok := m["id"]; ok {
				var result any
				if string(m["method"]) == `"workspace/configuration"` {
					var p struct{ Items []any }
					json.Unmarshal(m["params"], &p)
					result = make([]any, len(p.Items))
				}
				d.send(b, map[string]any{"jsonrpc": "2.0", "id": rid, "result": result})
			}
			continue
		}
		if string(m["id"]) == id {
			return m["result"]
		}
	}
}

// definition is the same sequence dsh sends: didOpen, definition,
// didClose.
func (d *direct) definition(b testing.TB, ws, file string, line, char int) json.RawMessage {
	text, err := os.ReadFile(filepath.Join(ws, file))
	if err != nil {
		b.Fatal(err)
	}
	uri := "file://" + filepath.Join(ws, file)
	d.send(b, map[string]any{"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": map[string]any{
		"textDocument": map[string]any{"uri": uri, "languageId": "go", "version": 1, "text": string(text)}}})
	r := d.call(b, "textDocument/definition", map[string]any{"textDocument": map[string]string{"uri": uri},
		"position": map[string]int{"line": line, "character": char}})
	d.send(b, map[string]any{"jsonrpc": "2.0", "method": "textDocument/didClose", "params": map[string]any{
		"textDocument": map[string]string{"uri": uri}}})
	return r
}

func (d *direct) close() {
	d.in.Close()
	d.cmd.Process.Kill()
	d.cmd.Wait()
}

func p50(s []time.Duration) time.Duration {
	s = slices.Clone(s)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkWarmDefinition asks gopls for a definition through the lsp
// package (in a native world) and through the direct client (on the
// host), alternately in one run, and reports both medians and their
// ratio (dsh/direct, target ≤ 1.2).
//
// world=native is the product; world=host runs the same lsp package over
// execworldtest's fake (host processes, no confinement), separating the
// package's own cost from the world's stdio transport.
func BenchmarkWarmDefinition(b *testing.B) {
	for _, world := range []string{"native", "host"} {
		b.Run("world="+world, func(b *testing.B) {
			if world == "native" {
				testenv.RequireUserNS(b)
			}
			benchWarm(b, openLocal(b, []lsp.ServerConfig{goplsServer(b)}, world == "host"))
		})
	}
}

func benchWarm(b *testing.B, g *goWorld) {
	d := startDirect(b, gopls(b), g.ws)
	defer d.close()
	q := lsp.Query{Op: lsp.Definition, File: "use.go", Line: useLine, Column: totalCol}
	ctx := context.Background()
	// Warm both: the first answers load the packages.
	if _, err := g.c.Query(ctx, q); err != nil {
		b.Fatal(err)
	}
	// UTF-16 column of Total: é is one unit, 😀 two.
	char := totalCol - 1 + 1
	if r := d.definition(b, g.ws, "use.go", useLine-1, char); !strings.Contains(string(r), "total.go") {
		b.Fatalf("direct definition = %s", r)
	}
	var viaDsh, viaDirect []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, err := g.c.Query(ctx, q); err != nil {
			b.Fatal(err)
		}
		viaDsh = append(viaDsh, time.Since(start))
		start = time.Now()
		d.definition(b, g.ws, "use.go", useLine-1, char)
		viaDirect = append(viaDirect, time.Since(start))
	}
	b.StopTimer()
	pd, pr := p50(viaDsh), p50(viaDirect)
	b.ReportMetric(float64(pd.Microseconds()), "dsh-p50-µs")
	b.ReportMetric(float64(pr.Microseconds()), "direct-p50-µs")
	b.ReportMetric(float64(pd)/float64(pr), "ratio")
}

// BenchmarkColdDefinition is the first answer: world open, server start
// and answer through the lsp package, against starting gopls on the
// host and asking directly.
func BenchmarkColdDefinition(b *testing.B) {
	gp := gopls(b)
	var viaDsh, viaDirect []time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		g := openNative(b, []lsp.ServerConfig{goplsServer(b)})
		if _, err := g.c.Query(context.Background(), lsp.Query{Op: lsp.Definition, File: "use.go", Line: useLine, Column: totalCol}); err != nil {
			b.Fatal(err)
		}
		viaDsh = append(viaDsh, time.Since(start))
		start = time.Now()
		d := startDirect(b, gp, g.ws)
		d.definition(b, g.ws, "use.go", useLine-1, totalCol)
		viaDirect = append(viaDirect, time.Since(start))
		d.close()
		g.c.Close()
		g.w.Close()
	}
	pd, pr := p50(viaDsh), p50(viaDirect)
	b.ReportMetric(float64(pd.Milliseconds()), "dsh-p50-ms")
	b.ReportMetric(float64(pr.Milliseconds()), "direct-p50-ms")
	b.ReportMetric(float64(pd)/float64(pr), "ratio")
}
