package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/execworld/execworldtest"
	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/lsp"
	"github.com/dsh-dev/dsh/sandbox"
	"github.com/dsh-dev/dsh/sandbox/docker"
	"github.com/dsh-dev/dsh/sandbox/native"
)

// gopls returns the gopls scripts/ensure-gopls.sh installed: in
// DSH_PEERS_DIR, else .cache/peers of the checkout. Missing, the test
// skips, or fails with DSH_REQUIRE_TOOLS=1.
func gopls(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("DSH_PEERS_DIR")
	if dir == "" {
		dir = "../../../.cache/peers"
	}
	p, err := filepath.Abs(filepath.Join(dir, "bin", "gopls"))
	if err == nil {
		if _, err = os.Stat(p); err == nil {
			return p
		}
	}
	why := "gopls is not installed in " + dir + "/bin; run scripts/ensure-gopls.sh (make test does)"
	if os.Getenv("DSH_REQUIRE_TOOLS") == "1" {
		t.Fatalf("%s, and DSH_REQUIRE_TOOLS=1 requires it", why)
	}
	t.Skip(why + " (set DSH_REQUIRE_TOOLS=1 to make this a failure)")
	return ""
}

// The module: an interface in one file, two implementations, a function
// used on a line with a two-byte and a non-BMP character before it.
var module = map[string]string{
	"go.mod": "module example.com/shapes\n\ngo 1.26\n",
	"shape.go": `package shapes

// Shape is anything with an area.
type Shape interface {
	Area() float64
}
`,
	"square.go": `package shapes

type Square struct{ Side float64 }

func (s Square) Area() float64 { return s.Side * s.Side }
`,
	"circle.go": `package shapes

type Circle struct{ R float64 }

func (c Circle) Area() float64 { return 3 * c.R * c.R }
`,
	"total.go": `package shapes

// Total adds up the areas of shapes.
func Total(shapes ...Shape) float64 {
	t := 0.0
	for _, s := range shapes {
		t += s.Area()
	}
	return t
}
`,
	"use.go": `package shapes

func Label() string {
	s := "é😀"; _ = Total(Square{Side: 2}, Circle{R: 1})
	return s
}
`,
}

// useLine and totalCol are where Total is called in use.go: 1-based,
// the column in code points.
const useLine = 4

var totalCol = len([]rune(strings.Split(module["use.go"], "\n")[useLine-1][:strings.Index(strings.Split(module["use.go"], "\n")[useLine-1], "Total")])) + 1

type goWorld struct {
	w  *execworld.World
	c  *lsp.Client
	ws string
}

func openNative(t testing.TB, servers []lsp.ServerConfig) *goWorld {
	t.Helper()
	testenv.RequireUserNS(t)
	return openLocal(t, servers, false)
}

// openLocal opens a native world, or with fake execworldtest's
// unconfined fake (host processes: the benchmarks' breakdown).
func openLocal(t testing.TB, servers []lsp.ServerConfig, fake bool) *goWorld {
	t.Helper()
	ws := t.TempDir()
	for name, content := range module {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	spec := sandbox.DefaultSpec(ws)
	var w *execworld.World
	var err error
	if fake {
		w, _ = execworldtest.NewWorld(t, &execworld.Options{Spec: spec})
	} else {
		w, err = execworld.Open(context.Background(), native.New(nil), &execworld.Options{Spec: spec})
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	c, err := lsp.New(w, &lsp.Options{Servers: servers})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &goWorld{w: w, c: c, ws: w.FS.Root()}
}

func goplsServer(t testing.TB) lsp.ServerConfig {
	s := lsp.Presets()[0]
	if s.ID != "gopls" {
		t.Fatalf("the first preset is %s, not gopls", s.ID)
	}
	s.Command = gopls(t)
	return s
}

func (g *goWorld) query(t *testing.T, op lsp.Operation, file string, line, col int) *lsp.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := g.c.Query(ctx, lsp.Query{Op: op, File: file, Line: line, Column: col})
	if err != nil {
		t.Fatalf("%s %s:%d:%d: %v", op, file, line, col, err)
	}
	return res
}

func rendered(r *lsp.Result) string { return lsp.Render(r, nil) }

// serverPIDs are the world's gopls processes, by their pid inside it.
func serverPIDs(t *testing.T, w *execworld.World, name string) string {
	t.Helper()
	res, err := w.Exec.Run(context.Background(), &execworld.Cmd{Argv: []string{"sh", "-c",
		`for d in /proc/[0-9]*; do [ "$(cat $d/comm 2>/dev/null)" = "$1" ] && echo ${d#/proc/}; done; true`, "sh", name}})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(strings.Fields(res.Stdout.String()), " ")
}

func TestGoplsNative(t *testing.T) {
	testGopls(t, openNative(t, []lsp.ServerConfig{goplsServer(t)}))
}

// testGopls asks gopls the four questions about the module, kills it
// and asks again, and checks that Close leaves nothing running.
func testGopls(t *testing.T, g *goWorld) {

	t.Run("definition across files", func(t *testing.T) {
		got := rendered(g.query(t, lsp.Definition, "use.go", useLine, totalCol))
		if got != "total.go:4:6" {
			t.Errorf("definition of Total = %q, want total.go:4:6", got)
		}
	})
	t.Run("references with the declaration", func(t *testing.T) {
		res := g.query(t, lsp.References, "use.go", useLine, totalCol)
		got := rendered(res)
		// The call's column comes back in code points, as it was asked.
		want := map[string]bool{"total.go:4:6": true, "use.go:4:" + itoa(totalCol): true}
		if len(res.Locations) != 2 || !want[strings.Split(got, "\n")[0]] || !want[strings.Split(got, "\n")[1]] {
			t.Errorf("references of Total = %q, want %v", got, want)
		}
	})
	t.Run("implementations of an interface method", func(t *testing.T) {
		got := rendered(g.query(t, lsp.Implementation, "shape.go", 5, 2))
		lines := strings.Split(got, "\n")
		if len(lines) != 2 || !strings.Contains(got, "square.go:5:17") || !strings.Contains(got, "circle.go:5:17") {
			t.Errorf("implementations of Shape.Area = %q, want square.go:5:17 and circle.go:5:17", got)
		}
	})
	t.Run("hover with the signature", func(t *testing.T) {
		got := rendered(g.query(t, lsp.Hover, "use.go", useLine, totalCol+2))
		if !strings.Contains(got, "func Total(shapes ...Shape) float64") || !strings.Contains(got, "adds up the areas") {
			t.Errorf("hover of Total = %q, want its signature and doc", got)
		}
	})
	t.Run("a killed server is replaced", func(t *testing.T) {
		pids := serverPIDs(t, g.w, "gopls")
		if pids == "" {
			t.Fatal("no gopls runs in the world")
		}
		// One process: a second (gopls's crash-reporting copy of
		// itself) is in a process group of its own and outlives Close.
		if n := len(strings.Fields(pids)); n != 1 {
			t.Errorf("%d gopls processes run (%s), want 1", n, pids)
		}
		if _, err := g.w.Exec.Run(context.Background(), &execworld.Cmd{Argv: append([]string{"sh", "-c", `kill -9 "$@"`, "sh"}, strings.Fields(pids)...)}); err != nil {
			t.Fatal(err)
		}
		got := rendered(g.query(t, lsp.Definition, "use.go", useLine, totalCol))
		if got != "total.go:4:6" {
			t.Errorf("definition after the kill = %q, want total.go:4:6", got)
		}
		if now := serverPIDs(t, g.w, "gopls"); now == "" || now == pids {
			t.Errorf("gopls pids %q after the kill, were %q: want a fresh process", now, pids)
		}
	})
	t.Run("nothing runs after Close", func(t *testing.T) {
		if err := g.c.Close(); err != nil {
			t.Fatal(err)
		}
		if pids := serverPIDs(t, g.w, "gopls"); pids != "" {
			t.Errorf("gopls still runs after Close: %s", pids)
		}
	})
}

func TestServerExitingAtStartNative(t *testing.T) {
	g := openNative(t, []lsp.ServerConfig{{
		ID: "broken", Command: "sh", Args: []string{"-c", "echo 'broken: cannot find the module root' >&2; exit 2"},
		Extensions: map[string]string{".go": "go"},
	}})
	_, err := g.c.Query(context.Background(), lsp.Query{Op: lsp.Definition, File: "use.go", Line: useLine, Column: totalCol})
	if lsp.CodeOf(err) != lsp.CodeServerFailed {
		t.Fatalf("error = %v, want LSP_SERVER_FAILED", err)
	}
	for _, want := range []string{"exited (exit status 2)", "broken: cannot find the module root"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// initBinary is the static dsh binary a docker world runs as its init.
func initBinary(t *testing.T) string { return testenv.StaticDsh(t) }

// goImage is the image images/build.sh builds with Go and gopls.
const goImage = "dsh/go:latest"

func openDocker(t *testing.T, servers []lsp.ServerConfig) *goWorld {
	t.Helper()
	return openDockerImage(t, goImage, servers, module)
}

// openDockerImage opens a docker world of image whose workspace holds
// files, with an lsp client for servers.
func openDockerImage(t *testing.T, image string, servers []lsp.ServerConfig, files map[string]string) *goWorld {
	t.Helper()
	testenv.RequireDocker(t)
	if err := exec.Command("docker", "image", "inspect", image).Run(); err != nil {
		if os.Getenv("DSH_REQUIRE_DOCKER") == "1" {
			t.Fatalf("image %s is missing; build it with: make images peers", image)
		}
		t.Skipf("image %s is missing; build it with: make images peers", image)
	}
	d, err := docker.New(&docker.Options{InitPath: initBinary(t)})
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	spec := sandbox.DefaultSpec(ws)
	spec.Image = image
	w, err := execworld.Open(context.Background(), d, &execworld.Options{Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		w.Close()
		if c, ok := any(d).(interface{ Close() error }); ok {
			c.Close()
		}
	})
	c, err := lsp.New(w, &lsp.Options{Servers: servers})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &goWorld{w: w, c: c, ws: w.FS.Root()}
}

func TestGoplsDocker(t *testing.T) {
	// The preset as it is: gopls and go resolve on the image's PATH.
	g := openDocker(t, []lsp.ServerConfig{lsp.Presets()[0]})
	testGopls(t, g)
}

func itoa(n int) string { return strconv.Itoa(n) }
