package conformance

import (
	"context"
	"fmt"
	"strings"

	"github.com/dsh-dev/dsh/execworld"
)

// A process of the world holds no socket: none of the driver's channels
// to the init (the native driver's stdio socket, over which the init
// passes processes' pipes to dsh, or the egress broker connection), which
// would let code in the world take other processes' stdio or egress
// streams. (That it holds nothing but its stdio is pid1's and the
// drivers' own tests: the unconfined host driver passes on whatever its
// caller leaked, so this check asks only what every driver must hold.)
func checkNoSocketInherited(ctx context.Context, s *suite) error {
	w, err := s.mainWorld(ctx)
	if err != nil {
		return err
	}
	// The glob's own directory descriptor is closed again by the time the
	// loop tests each entry.
	res, err := w.run(ctx, &execworld.Cmd{
		Argv:  []string{"/bin/sh", "-c", `for f in /proc/$$/fd/*; do [ -e "$f" ] && printf '%s=%s\n' "${f##*/}" "$(readlink "$f")"; done; true`},
		Stdin: strings.NewReader(""),
	})
	if err != nil {
		return err
	}
	if res.ExitCode() != 0 {
		return fmt.Errorf("listing a process's descriptors: exit %d: %s", res.ExitCode(), res.Stderr.Data)
	}
	got := lines(res.Stdout.String())
	var problems []string
	seen := map[string]bool{}
	for _, l := range got {
		fd, target, _ := strings.Cut(l, "=")
		seen[fd] = true
		if strings.HasPrefix(target, "socket:") {
			problems = append(problems, fmt.Sprintf("fd %s is a socket (%s)", fd, target))
		}
	}
	for _, fd := range []string{"0", "1", "2"} {
		if !seen[fd] {
			problems = append(problems, "fd "+fd+" is missing")
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("descriptors of a world process %q: %s; want 0, 1 and 2, none a socket", got, strings.Join(problems, "; "))
	}
	return nil
}
