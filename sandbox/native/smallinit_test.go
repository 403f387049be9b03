package native

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/sandbox"
)

// testInitEnv names an init binary the tests run instead of the test
// binary (which serves as the init by default, see TestMain), e.g. the
// small init dsh embeds: DSH_NATIVE_TEST_INIT=path go test ./sandbox/native/
// runs every world of the package on it.
const testInitEnv = "DSH_NATIVE_TEST_INIT"

// initExe is the binary the tests' worlds run as their init.
func initExe(t testing.TB) string {
	if p := os.Getenv(testInitEnv); p != "" {
		return p
	}
	return testExe(t)
}

// helperInit makes the test's worlds run the test binary as their init
// whatever testInitEnv says: the test runs the helper inside as
// /proc/self/exe (the init's binary, from pid1 or as PID 1).
func helperInit(t *testing.T) { t.Setenv(testInitEnv, "") }

var smallInit struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// buildSmallInit builds cmd/dsh-init the way `make build` does before it
// embeds it (the entry point included), once per test binary.
func buildSmallInit(t *testing.T) string {
	t.Helper()
	smallInit.once.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			smallInit.err = err
			return
		}
		dir, err := os.MkdirTemp("", "dsh-init-build-")
		if err != nil {
			smallInit.err = err
			return
		}
		os.Chmod(dir, 0o755)
		smallInit.path = filepath.Join(dir, "dsh-init")
		cmd := exec.Command(goBin, "build", "-trimpath", "-ldflags="+testenv.InitLDFlags(), "-o", smallInit.path, "github.com/dsh-dev/dsh/cmd/dsh-init")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		smallInit.out, smallInit.err = cmd.CombinedOutput()
	})
	if smallInit.err != nil {
		t.Fatalf("building cmd/dsh-init: %v\n%s", smallInit.err, smallInit.out)
	}
	return smallInit.path
}

// TestSmallInit runs the conformance suite, as root and as an
// unprivileged user, and the check of the init's own threads, with the
// small init dsh embeds instead of the test binary.
func TestSmallInit(t *testing.T) {
	testenv.RequireUserNS(t)
	t.Setenv(testInitEnv, buildSmallInit(t))
	t.Run("EntryPointDrop", testSmallInitEntryDrop)
	t.Run("Conformance", TestConformance)
	t.Run("ConformanceUnprivileged", TestConformanceUnprivileged)
	t.Run("InitThreadsAreConfined", TestInitThreadsAreConfined)
}

// testSmallInitEntryDrop: on amd64 the small init's entry point has
// dropped the bounding set and the rest before the runtime started
// (nsinit found it done and only verified it), rather than the
// all-threads fallback doing it silently.
func testSmallInitEntryDrop(t *testing.T) {
	testenv.RequireCgroups(t)
	t.Setenv("DSH_NATIVE_TRACE", "1")
	var errOut syncBuffer
	spec := sandbox.DefaultSpec(t.TempDir())
	in, err := New(&Options{Executable: initExe(t), StateDir: stateDir(t), Stderr: &errOut}).Open(context.Background(), spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	in.Close()
	want := "drop(exec, entry)"
	if runtime.GOARCH != "amd64" {
		want = "drop(exec, init)" // no entry point there: the Go fallback
	}
	if got := errOut.String(); !strings.Contains(got, want) {
		t.Errorf("the init's trace does not show %q:\n%s", want, got)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
