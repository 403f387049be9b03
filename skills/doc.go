// Package skills discovers skills — named, trusted instruction bodies
// with a one-line description — and merges them into a layered catalog.
//
// A skill is <root>/<name>/SKILL.md or <root>/<name>.md (one level deep)
// with YAML frontmatter: name (kebab-case) and description are required;
// when_to_use, metadata, disable-model-invocation and user-invocable are
// optional. Roots have ranks: project .dsh/skills 100, project
// .agents/skills 200, runtime 250, custom 300, ~/.dsh/skills 400,
// ~/.agents/skills 500, bundled 600. Inside one layer the lowest rank wins
// a name (registration order breaks equal ranks); a nearer layer replaces
// a same-name entry of a farther one outright.
//
// Project roots are read through an FS the caller gives, in dsh the
// world's kernel-confined workspace FS, so a symlink planted in the
// workspace cannot make discovery read outside it; user, custom and
// bundled roots are read from the host. Every world mounts .dsh/ and
// .agents/ read-only, so nothing a world runs can add or edit a project
// skill that a later call would trust.
//
// A discovery that could not read a root is incomplete: the Discoverer
// keeps its last complete catalog and says why.
package skills
