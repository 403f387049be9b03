package pid1

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"

	"github.com/dsh-dev/dsh/sandbox"
)

// BenchmarkRoundTrip starts /bin/true and collects its (empty) output and
// status: through the init, against plain fork/exec in the same run.
func BenchmarkRoundTrip(b *testing.B) {
	b.Run("baseline=os-exec", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("baseline=os-exec-pipes", func(b *testing.B) {
		// The same work the init does: stdout and stderr as pipes.
		for b.Loop() {
			var out, errb bytes.Buffer
			cmd := exec.Command("/bin/true")
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	spec := sandbox.ProcessSpec{Argv: []string{"/bin/true"}}
	b.Run("pid1", func(b *testing.B) {
		ip := startInit(b, nil)
		for b.Loop() {
			run(b, ip.client, spec)
		}
	})
	b.Run("pid1-stdin", func(b *testing.B) {
		ip := startInit(b, nil)
		spec := spec
		spec.Stdin = true
		for b.Loop() {
			run(b, ip.client, spec)
		}
	})
	b.Run("pid1-pidns", func(b *testing.B) {
		if os.Geteuid() != 0 {
			b.Skip("needs root for CLONE_NEWPID")
		}
		ip := startInit(b, &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID})
		for b.Loop() {
			run(b, ip.client, spec)
		}
	})
}

// BenchmarkStdout moves 64 MiB of stdout: through the init, against the
// same program writing into a pipe read by this process.
func BenchmarkStdout(b *testing.B) {
	const n = 64 << 20
	exe, _ := os.Executable()
	args := []string{strconv.Itoa(n)}
	b.Run("baseline=os-exec-pipe", func(b *testing.B) {
		b.SetBytes(n)
		for b.Loop() {
			cmd := exec.Command(exe, args...)
			cmd.Env = []string{"_DSH_PID1_HELPER=blast"}
			cmd.Stdout = io.Discard
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pid1", func(b *testing.B) {
		ip := startInit(b, nil)
		spec := helper("blast", args...)
		b.SetBytes(n)
		for b.Loop() {
			p, err := ip.client.Start(b.Context(), spec)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.Copy(io.Discard, p.Stdout()); err != nil {
				b.Fatal(err)
			}
			if _, err := io.Copy(io.Discard, p.Stderr()); err != nil {
				b.Fatal(err)
			}
			if st, err := p.Wait(); err != nil || st.Code != 0 {
				b.Fatal(st, err)
			}
		}
	})
}
