package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/skills"
)

func newSkillsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "skills",
		Short: "List and show the skills dsh serve offers",
		Long: `A skill is a trusted instruction body with a one-line description: dsh serve
offers the model a "skill" tool listing the model-invocable ones, and the
user-invocable ones as MCP prompts (slash commands in most clients).

A skill is ROOT/NAME/SKILL.md or ROOT/NAME.md (one level deep) starting with
YAML frontmatter: name (kebab-case) and description are required;
when_to_use, metadata, disable-model-invocation and user-invocable (true/false,
yes/no, on/off or 1/0) are optional. The roots, by rank (lower wins a name):

  100  WORKSPACE/.dsh/skills      project
  200  WORKSPACE/.agents/skills   project
  250  (registered by dsh)        runtime
  400  ~/.dsh/skills              user
  500  ~/.agents/skills           user

Project roots are read with the world's kernel-confined workspace reads
(openat2 beneath the workspace, so a symlink cannot lead out of it); every
world mounts .dsh/ and .agents/ read-only, so nothing run in a world can add
or change a skill. An invalid skill file is listed as dropped, with why.
A root that cannot be read makes the listing incomplete: it is said on
stderr and dsh exits 1.`,
		Example: `  dsh skills list
  dsh skills list --json --workspace ~/src/app
  dsh skills show pdf-tools`,
	}
	list := &cobra.Command{
		Use:   "list [--json] [--workspace DIR]",
		Short: "List the skills: name, description, rank, root, provenance, invocation, and dropped files",
		Example: `  dsh skills list
  dsh skills list --json`,
		Args: cobra.NoArgs,
		RunE: runSkillsList,
	}
	show := &cobra.Command{
		Use:   "show NAME [--json] [--workspace DIR]",
		Short: "Show one skill: its fields and its body",
		Example: `  dsh skills show pdf-tools
  dsh skills show pdf-tools --json`,
		Args: cobra.ExactArgs(1),
		RunE: runSkillsShow,
	}
	for _, c := range []*cobra.Command{list, show} {
		c.Flags().Bool("json", false, "print JSON")
		c.Flags().String("workspace", "", "workspace directory whose project skills are read (default: current directory)")
	}
	cmd.AddCommand(list, show)
	return cmd
}

// discoverSkills reads the skills of the command's workspace and of the
// user. The workspace is read through execworld.OpenFS: the same
// openat2-confined reads as World.FS, without starting a world (.dsh/
// and .agents/ are read-only in every world, so its view of them is the
// host's).
func discoverSkills(cmd *cobra.Command) (skills.Result, error) {
	ws, _ := cmd.Flags().GetString("workspace")
	if ws == "" {
		wd, err := os.Getwd()
		if err != nil {
			return skills.Result{}, fmt.Errorf("finding the current directory for the workspace: %w; pass --workspace", err)
		}
		ws = wd
	}
	abs, err := absDir(ws)
	if err != nil {
		return skills.Result{}, err
	}
	wfs, err := execworld.OpenFS(abs)
	if err != nil {
		return skills.Result{}, fmt.Errorf("opening workspace %s: %w", abs, err)
	}
	defer wfs.Close()
	home, _ := os.UserHomeDir()
	return skills.NewDiscoverer(skills.Config{Project: skills.WorldFS(wfs), Home: home}).Discover(), nil
}

// incomplete says on stderr why the discovery was incomplete and returns
// the exit status error (nil if complete).
func incomplete(w io.Writer, r skills.Result) error {
	if len(r.Problems) == 0 {
		return nil
	}
	for _, p := range r.Problems {
		fmt.Fprintln(w, "dsh skills: incomplete:", p)
	}
	return exitCode(1)
}

func runSkillsList(cmd *cobra.Command, _ []string) error {
	r, err := discoverSkills(cmd)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
		problems := r.Problems
		if problems == nil {
			problems = []string{}
		}
		sks := r.Catalog.Skills
		if sks == nil {
			sks = []skills.Skill{}
		}
		if err := writeJSON(out, map[string]any{
			"skills": sks, "dropped": r.Catalog.Dropped, "digest": r.Catalog.Digest,
			"complete": len(r.Problems) == 0, "problems": problems,
		}); err != nil {
			return err
		}
		return incomplete(cmd.ErrOrStderr(), r)
	}
	if len(r.Catalog.Skills) == 0 {
		fmt.Fprintln(out, "no skills (put one in .dsh/skills/NAME/SKILL.md; see dsh skills --help)")
	}
	for _, s := range r.Catalog.Skills {
		fmt.Fprintf(out, "%s\t%s\n    %s rank %d, %s; %s\n", s.Name, s.Description, s.Provenance, s.Rank, s.Path, invocation(s))
	}
	if len(r.Catalog.Dropped) > 0 {
		fmt.Fprintln(out, "dropped:")
		for _, d := range r.Catalog.Dropped {
			fmt.Fprintf(out, "  %s: %s\n", d.Path, d.Reason)
		}
	}
	return incomplete(cmd.ErrOrStderr(), r)
}

func invocation(s skills.Skill) string {
	var by []string
	if s.ModelInvocable {
		by = append(by, "model")
	}
	if s.UserInvocable {
		by = append(by, "user")
	}
	if len(by) == 0 {
		return "invocable by nobody"
	}
	return "invocable by " + strings.Join(by, " and ")
}

func runSkillsShow(cmd *cobra.Command, args []string) error {
	r, err := discoverSkills(cmd)
	if err != nil {
		return err
	}
	name := args[0]
	s, ok := r.Catalog.Lookup(name)
	if !ok {
		for _, d := range r.Catalog.Dropped {
			if d.Name == name {
				return exitf(1, "skill %s is not in the catalog: %s: %s", name, d.Path, d.Reason)
			}
		}
		if err := incomplete(cmd.ErrOrStderr(), r); err != nil {
			return exitf(1, "no skill %s, and the discovery was incomplete", name)
		}
		return exitf(1, "no skill %s; dsh skills list shows the catalog", name)
	}
	out := cmd.OutOrStdout()
	if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
		if err := writeJSON(out, struct {
			*skills.Skill
			Body string `json:"body"`
		}{s, s.Body}); err != nil {
			return err
		}
		return incomplete(cmd.ErrOrStderr(), r)
	}
	fmt.Fprintf(out, "name: %s\ndescription: %s\n", s.Name, s.Description)
	if s.WhenToUse != "" {
		fmt.Fprintf(out, "when_to_use: %s\n", s.WhenToUse)
	}
	fmt.Fprintf(out, "provenance: %s (rank %d, layer %s)\npath: %s\n%s\n\n%s", s.Provenance, s.Rank, s.Layer, s.Path, invocation(*s), s.Body)
	return incomplete(cmd.ErrOrStderr(), r)
}
