package conformance

import (
	"context"
	"fmt"
	"strings"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/sandbox"
)

// No world process has the host's terminal: each leads a session of its
// own, visible inside the world, with no controlling terminal (so
// /dev/tty names nothing, ENXIO), and on a terminal the world made for it
// (Cmd.TTY) that terminal is its controlling terminal, while TIOCSTI
// (typing into a terminal's input) and TIOCLINUX are refused (EPERM) by
// the filter, whatever the bits above the ioctl request's low 32.
func checkNoHostTerminal(ctx context.Context, s *suite) error {
	w, err := s.mainWorld(ctx)
	if err != nil {
		return err
	}
	var problems []string
	for _, onTTY := range []bool{false, true} {
		c := &execworld.Cmd{Argv: []string{w.probe, "terminal"}}
		where := "without a terminal"
		if onTTY {
			c.TTY = &sandbox.WindowSize{Rows: 24, Cols: 80}
			where = "on the world's terminal"
		}
		res, err := w.run(ctx, c)
		if err != nil {
			return err
		}
		out := lines(strings.ReplaceAll(res.Stdout.String(), "\r", ""))
		if res.ExitCode() != 0 {
			return fmt.Errorf("probe terminal %s exited %d: %q %q", where, res.ExitCode(), out, res.Stderr.Data)
		}
		p := terminalProblems(out, onTTY)
		for _, q := range p {
			problems = append(problems, where+": "+q)
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("a world process reaches a terminal it must not: %s", strings.Join(problems, "; "))
	}
	return nil
}

// terminalProblems judges the probe's terminal report.
func terminalProblems(out []string, onTTY bool) []string {
	var problems []string
	sess := withPrefix(out, "session")
	if len(sess) != 1 {
		return []string{fmt.Sprintf("the probe reported no session: %q", out)}
	}
	f := strings.Fields(sess[0])
	pid, sid, ttyNr := f[1], f[2], f[3]
	if sid != pid {
		// 0: the session's leader is outside the world's pid namespace.
		problems = append(problems, fmt.Sprintf("process %s is in session %s, not a session of its own", pid, sid))
	}
	switch {
	case !onTTY && ttyNr != "0":
		problems = append(problems, fmt.Sprintf("it has a controlling terminal (tty_nr %s)", ttyNr))
	case onTTY && ttyNr == "0":
		problems = append(problems, "the terminal it was given is not its controlling terminal")
	}
	devtty := withPrefix(out, "devtty")
	switch {
	case len(devtty) != 1:
		problems = append(problems, fmt.Sprintf("the probe reported nothing for /dev/tty: %q", out))
	case !onTTY && devtty[0] != "devtty ENXIO" && devtty[0] != "devtty ENOENT":
		problems = append(problems, fmt.Sprintf("/dev/tty: %s (want ENXIO: no controlling terminal)", strings.TrimPrefix(devtty[0], "devtty ")))
	case onTTY && devtty[0] != "devtty ok "+pid:
		problems = append(problems, fmt.Sprintf("/dev/tty: %s (want the world's terminal, of session %s)", strings.TrimPrefix(devtty[0], "devtty "), pid))
	}
	for _, op := range []string{"tiocsti", "tiocsti-high", "tioclinux"} {
		for _, l := range withPrefix(out, op) {
			f := strings.Fields(l)
			if len(f) != 3 {
				continue
			}
			// On a terminal of its own only the filter can refuse; without
			// one, fds 0-2 are no terminal (ENOTTY) and anything is fine
			// but success.
			if f[2] == "ok" || (onTTY && f[2] != "EPERM") {
				problems = append(problems, fmt.Sprintf("%s on %s: %s (want EPERM)", strings.ToUpper(op), f[1], f[2]))
			}
		}
	}
	if onTTY && len(withPrefix(out, "tiocsti")) == 0 {
		problems = append(problems, fmt.Sprintf("the probe tried no TIOCSTI: %q", out))
	}
	return problems
}
