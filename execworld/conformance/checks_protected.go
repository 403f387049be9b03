package conformance

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/sandbox"
)

// protectedWrites are the writes of the default protected paths a world
// tries: project configuration dsh reads, and git's configuration and
// hooks that the user's own git runs unconfined (commondir would point
// git at another directory's config).
var protectedWrites = []string{
	"write:dsh.yaml", "write:.git/config", "write:.git/commondir", "write:.git/hooks/x", "write:.git/info/exclude",
	"write:.dsh/skills/x", "write:.agents/x", "write:.envrc", "write:.vscode/tasks.json",
}

// Protected paths are read-only in a world, whether they exist or not:
// writing dsh.yaml, .git/config, .git/hooks/x or .dsh/skills/x fails with
// EROFS, in a repository made by git init and in an empty workspace
// (where nothing may be planted either); the directories that hold them
// cannot be moved or removed to put others in their place; a commit's
// writes in .git (objects, index, refs, HEAD) still work, and so does
// git commit where the world has git. After the world, the workspace
// holds what it held before, and nothing the driver made for the world.
func checkProtectedPaths(ctx context.Context, s *suite) error {
	var problems []string
	// A repository, made on the host before the world opens.
	var setupErr error
	w, err := s.open(ctx, func(sp *sandbox.Spec) { setupErr = makeRepo(sp.Workspace) })
	if err != nil {
		return err
	}
	if setupErr != nil {
		w.w.Close()
		return setupErr
	}
	before, err := snapshot(w.ws, "dsh.yaml", ".git/config", ".git/hooks", ".dsh")
	if err != nil {
		w.w.Close()
		return err
	}
	ops := append(append([]string(nil), protectedWrites...), "rename:.git:.git-moved", "rename:.dsh:.dsh-moved", "remove:dsh.yaml", "chmod:.git/config")
	out, err := w.probeRun(ctx, append([]string{"protect"}, ops...)...)
	if err != nil {
		w.w.Close()
		return err
	}
	s.logf("repository: %s", strings.Join(out, "; "))
	problems = append(problems, protectedRefusals("in a repository", out)...)
	problems = append(problems, worldCommit(ctx, s, w)...)
	git, err := w.probeRun(ctx, "gitwrites")
	if err != nil {
		w.w.Close()
		return err
	}
	if bad := withPrefix(git, "refused"); len(bad) > 0 || len(withPrefix(git, "ok")) != 5 {
		problems = append(problems, fmt.Sprintf("a commit's writes in .git fail: %s", strings.Join(git, "; ")))
	}
	w.w.Close()
	after, err := snapshot(w.ws, "dsh.yaml", ".git/config", ".git/hooks", ".dsh")
	if err != nil {
		return err
	}
	if changed := lineDiff(before, after); changed != "" {
		problems = append(problems, "protected files changed on the host: "+changed)
	}
	for _, d := range []string{".git", ".dsh"} {
		if _, err := os.Lstat(filepath.Join(w.ws, d+"-moved")); err == nil {
			problems = append(problems, d+" was moved aside in the workspace")
		}
	}

	// An empty workspace: nothing may be planted where protected paths
	// would be.
	e, err := s.open(ctx, nil)
	if err != nil {
		return err
	}
	out, err = e.probeRun(ctx, append(append([]string{"protect"}, protectedWrites...), "remove:.git", "remove:dsh.yaml")...)
	e.w.Close()
	if err != nil {
		return err
	}
	s.logf("empty workspace: %s", strings.Join(out, "; "))
	problems = append(problems, protectedRefusals("in an empty workspace", out)...)
	entries, err := os.ReadDir(e.ws)
	if err != nil {
		return err
	}
	for _, de := range entries {
		if de.Name() != ".dsh-probe" {
			problems = append(problems, fmt.Sprintf("the empty workspace holds %s after the world closed", de.Name()))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("protected paths: %s", strings.Join(problems, "\n"))
	}
	return nil
}

// protectedRefusals returns what is wrong in the probe's answers: a
// protected write that did not fail with EROFS, a move or removal that
// worked.
func protectedRefusals(where string, out []string) []string {
	var problems []string
	for _, op := range protectedWrites {
		name, path, _ := strings.Cut(op, ":")
		if len(withPrefix(out, fmt.Sprintf("refused %s %s EROFS", name, path))) != 1 {
			problems = append(problems, fmt.Sprintf("%s, %s %s was not refused with EROFS (probe: %s)", where, name, path, answer(out, name+" "+path)))
		}
	}
	for _, l := range out {
		if strings.HasPrefix(l, "ok rename") || strings.HasPrefix(l, "ok remove") || strings.HasPrefix(l, "ok chmod") {
			problems = append(problems, fmt.Sprintf("%s, %s worked", where, strings.TrimPrefix(l, "ok ")))
		}
	}
	return problems
}

// answer is the probe's line about what ("write dsh.yaml").
func answer(out []string, what string) string {
	for _, l := range out {
		if strings.Contains(l, " "+what) {
			return l
		}
	}
	return "no answer"
}

// worldCommit commits a file with git inside w, when the world has git,
// and checks on the host that the commit is there.
func worldCommit(ctx context.Context, s *suite, w *world) []string {
	res, err := w.run(ctx, &execworld.Cmd{Argv: []string{"/bin/sh", "-c", `command -v git >/dev/null || { echo no-git; exit 0; }
echo from-world > committed
g() { git -c safe.directory='*' -c user.name=dsh -c user.email=dsh@invalid -c commit.gpgsign=false "$@"; }
g add committed && g commit -q -m from-world && echo committed`}})
	if err != nil {
		return []string{err.Error()}
	}
	switch strings.TrimSpace(res.Stdout.String()) {
	case "no-git":
		s.logf("the world has no git: only the writes of a commit were tried")
		return nil
	case "committed":
	default:
		return []string{fmt.Sprintf("git commit inside the world: exit %d, %s%s", res.ExitCode(), res.Stdout.Data, res.Stderr.Data)}
	}
	if _, err := exec.LookPath("git"); err != nil {
		s.logf("git commit inside the world worked (the host has no git to read it back)")
		return nil
	}
	b, err := exec.CommandContext(ctx, "git", "-c", "safe.directory=*", "-C", w.ws, "log", "-1", "--format=%s").CombinedOutput()
	if err != nil || strings.TrimSpace(string(b)) != "from-world" {
		return []string{fmt.Sprintf("the world's commit is not in the repository on the host: %q, %v", b, err)}
	}
	s.logf("git commit inside the world worked, and the host's git log shows it")
	return nil
}

// makeRepo makes a git repository in ws (git init where the host has
// git, else the same layout by hand), a dsh.yaml and a .dsh/skills
// directory, all writable by any world user, as a project's would be for
// its owner.
func makeRepo(ws string) error {
	if _, err := exec.LookPath("git"); err == nil {
		if b, err := exec.Command("git", "init", "-q", ws).CombinedOutput(); err != nil {
			return fmt.Errorf("git init %s: %v: %s", ws, err, b)
		}
	} else {
		for _, d := range []string{"objects", "refs/heads", "hooks", "info"} {
			if err := os.MkdirAll(filepath.Join(ws, ".git", d), 0o755); err != nil {
				return err
			}
		}
		for f, c := range map[string]string{"HEAD": "ref: refs/heads/main\n", "config": "[core]\n\trepositoryformatversion = 0\n", "info/exclude": ""} {
			if err := os.WriteFile(filepath.Join(ws, ".git", f), []byte(c), 0o644); err != nil {
				return err
			}
		}
	}
	if err := os.WriteFile(filepath.Join(ws, "dsh.yaml"), []byte("# the project's own\n"), 0o644); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(ws, ".dsh", "skills"), 0o755); err != nil {
		return err
	}
	return filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.Chmod(p, 0o777)
		}
		return os.Chmod(p, fi.Mode().Perm()|0o666)
	})
}

// lineDiff lists the lines of before missing from after ("-") and the
// new lines of after ("+"), or "".
func lineDiff(before, after string) string {
	var out []string
	b, a := lines(before), lines(after)
	for _, l := range b {
		if !slices.Contains(a, l) {
			out = append(out, "-"+l)
		}
	}
	for _, l := range a {
		if !slices.Contains(b, l) {
			out = append(out, "+"+l)
		}
	}
	return strings.Join(out, "; ")
}

// snapshot describes the files at and below paths in ws (path, mode,
// content hash), for comparing before and after a world.
func snapshot(ws string, paths ...string) (string, error) {
	var b strings.Builder
	for _, p := range paths {
		err := filepath.WalkDir(filepath.Join(ws, p), func(f string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) {
				fmt.Fprintf(&b, "%s missing\n", p)
				return nil
			}
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(ws, f)
			fmt.Fprintf(&b, "%s %v", rel, fi.Mode())
			if fi.Mode().IsRegular() {
				c, err := os.ReadFile(f)
				if err != nil {
					return err
				}
				fmt.Fprintf(&b, " sha256:%x", sha256.Sum256(c))
			}
			b.WriteString("\n")
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	return b.String(), nil
}
