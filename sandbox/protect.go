package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// DefaultProtected are the workspace paths no world may write: the
// project configuration dsh itself reads (dsh.yaml, .dsh/), and files
// the user's own tools run unconfined when they next touch the
// workspace — git's configuration, hooks and info (core.fsmonitor,
// core.pager, hooks and filter drivers run at the next git status),
// agent instructions and skills (.agents/), direnv's .envrc and editor
// tasks (.vscode/). .git/commondir names the directory whose config and
// hooks git uses instead of .git's own: a world writing it would bypass
// .git/config. A trailing slash names a directory: it is the kind of
// placeholder made when the path does not exist.
var DefaultProtected = []string{
	".git/config", ".git/commondir", ".git/hooks/", ".git/info/",
	"dsh.yaml", ".dsh/", ".agents/", ".envrc", ".vscode/",
}

// ProtectedMount is one bind of a workspace path over itself that a
// driver adds after the workspace mount, in the order given (parents
// before children).
type ProtectedMount struct {
	// Path is the absolute host path, the same inside the world.
	Path string
	// ReadOnly is set for a protected path (or the placeholder standing
	// for a missing one). A mount without it is a pin: a directory that
	// holds protected paths, bound read-write over itself so that it is
	// a mount point, which no world can rename or remove to put another
	// in its place (rename and rmdir of a mount point fail with EBUSY).
	ReadOnly bool
}

// Protection is what PrepareProtected made for one world: the mounts
// its driver adds, and the placeholders it removes on Close.
type Protection struct {
	Mounts []ProtectedMount
	ws     string
	made   []placeholder
	held   []*os.File // a shared lock on every read-only path, for the world's life

	worldIsCaller bool
	journal       *journal // nil: the placeholders are recorded nowhere
}

// placeholder is an empty file or directory dsh made where a protected
// path was missing.
type placeholder struct {
	rel     string
	dir     bool
	content string // of a file
	// dev, ino and born (its birth time in ns, 0 where the file system
	// keeps none) tell the placeholder from a file made later at its
	// path, which may get its inode number.
	dev, ino uint64
	born     int64
	// unknown says its identity was never recorded (a dsh died between
	// writing it down and making it, or statx failed): it is taken for
	// dsh's while it is still the empty kind of thing dsh makes there.
	unknown bool
}

// placeholderContent is what a file placeholder holds where empty would
// break a tool: git dies on an empty commondir, and "." names the
// repository itself, as no commondir does.
var placeholderContent = map[string]string{".git/commondir": ".\n"}

// CheckProtected checks Spec.Protected: every entry is a clean relative
// path inside the workspace (a trailing slash marks a directory).
func CheckProtected(list []string) error {
	for i, p := range list {
		rel := strings.TrimSuffix(p, "/")
		bad := ""
		switch {
		case rel == "" || rel == ".":
			bad = "is empty or the workspace itself"
		case filepath.IsAbs(rel):
			bad = "is absolute"
		case filepath.Clean(rel) != rel:
			bad = fmt.Sprintf("is not clean (%q)", filepath.Clean(rel))
		case rel == ".." || strings.HasPrefix(rel, "../"):
			bad = "leaves the workspace"
		}
		if bad != "" {
			return &SpecError{Field: fmt.Sprintf("Protected[%d]", i), Msg: fmt.Sprintf("%q %s", p, bad),
				Fix: "give a path relative to the workspace, such as .git/config or .dsh/ (a trailing slash marks a directory)"}
		}
	}
	return nil
}

// PrepareProtected decides, on the host and before the world runs, the
// mounts that make list read-only in a world on the workspace ws (a real
// path, as Validate returns it). Paths are resolved beneath ws without
// following any symbolic link (openat2 with RESOLVE_BENEATH and
// RESOLVE_NO_SYMLINKS):
//   - an existing path is bound read-only over itself, and each directory
//     between the workspace and it is pinned (see ProtectedMount);
//   - at the first missing component, dsh makes an empty placeholder
//     (a directory, or an empty file for a last component without a
//     trailing slash) and binds it read-only, so the world can create
//     nothing there: a missing .git becomes an empty read-only .git,
//     where no repository (config, hooks, gitdir file) can be planted;
//   - a component that is a file where a directory was expected (a
//     worktree's .git file) is bound read-only itself: nothing can be
//     below it, and it cannot be replaced;
//   - a symbolic link is refused: a link cannot be bound without
//     following it, its target may be outside the workspace, and a world
//     could replace the link itself.
//
// worldIsCaller says the world writes the workspace with this process's
// own ids and no capability (the native driver run unprivileged): where
// this process may not create a placeholder, the world may not create the
// path either, so it needs none. Otherwise a placeholder that cannot be
// made is an error.
//
// masks are the world's masks (absolute real paths). Each directory
// between the workspace and a mask inside it is pinned: a mask travels
// with its directory, so a world that could rename a parent away would
// leave the masked path free for a directory of its own, which a host
// tool then reads as its own (dsh's configuration and trust store).
//
// Close removes the placeholders, unless they are no longer empty or
// another world still uses them. On error nothing is left behind.
//
// journalPath, unless empty, is a file to create in the driver's own
// state (no world may reach it) where each placeholder is recorded
// before it is made and again once it is: a dsh that dies before Close
// leaves it, and the next start removes what it records (ReapProtected).
func PrepareProtected(ws string, list, masks []string, worldIsCaller bool, journalPath string) (_ *Protection, err error) {
	if err := CheckProtected(list); err != nil {
		return nil, err
	}
	p := &Protection{ws: ws, worldIsCaller: worldIsCaller}
	if journalPath != "" {
		p.journal = &journal{path: journalPath, ws: ws}
	}
	var inside []string // masks in the workspace, relative to it
	for _, m := range masks {
		if !filepath.IsAbs(m) {
			continue // ~/…: a home's secrets, hidden wherever they are moved
		}
		real := filepath.Clean(m)
		if r, err := filepath.EvalSymlinks(real); err == nil {
			real = r
		}
		if rel, ok := strings.CutPrefix(real, ws+"/"); ok {
			inside = append(inside, rel)
		}
	}
	if len(list) == 0 && len(inside) == 0 {
		return p, nil
	}
	root, err := OpenExact(ws)
	if err != nil {
		return nil, fmt.Errorf("protected paths: opening the workspace %w", err)
	}
	defer unix.Close(root)
	unlock, err := lockWorkspace(ws)
	if err != nil {
		return nil, err
	}
	defer func() {
		unlock()
		if err != nil {
			p.Close()
		}
	}()
	want := map[string]bool{} // rel → read-only (else a pin)
	var missing []missingPath
	for i, entry := range list {
		err := p.resolve(root, entry, want, &missing)
		var link *linkError
		switch {
		case errors.As(err, &link):
			return nil, &SpecError{Field: fmt.Sprintf("Protected[%d]", i), Msg: err.Error(),
				Fix: "replace the link with what it names, or remove the entry from sandbox.protected"}
		case err != nil:
			return nil, protectError(entry, err)
		}
	}
	if err := p.makePlaceholders(root, missing, want); err != nil {
		return nil, err
	}
	for _, rel := range inside {
		if err := p.pinParents(root, rel, want); err != nil {
			return nil, err
		}
	}
	rels := make([]string, 0, len(want))
	for rel := range want {
		rels = append(rels, rel)
	}
	// Parents first; nothing below a read-only mount (it covers them).
	slices.SortFunc(rels, func(a, b string) int {
		if d := strings.Count(a, "/") - strings.Count(b, "/"); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	for _, rel := range rels {
		covered := false
		for _, m := range p.Mounts {
			covered = covered || m.ReadOnly && strings.HasPrefix(rel, strings.TrimPrefix(m.Path, ws+"/")+"/")
		}
		if !covered {
			p.Mounts = append(p.Mounts, ProtectedMount{Path: filepath.Join(ws, rel), ReadOnly: want[rel]})
		}
	}
	for _, m := range p.Mounts {
		if m.ReadOnly {
			if err := p.hold(root, strings.TrimPrefix(m.Path, ws+"/")); err != nil {
				return nil, err
			}
		}
	}
	return p, nil
}

// OpenExact opens the path dsh checked (absolute, its links resolved
// when it was checked) as an O_PATH descriptor, following no symbolic
// link. A world that may write a directory above it could swap a part of
// it for a link between the check and its use, to have dsh or the world
// use what the link names (a system location, another's home); the swap
// is then refused, not followed. A directory left at the path without a
// link lies where the check said, whatever a world renamed.
func OpenExact(p string) (int, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, p, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if errors.Is(err, unix.ELOOP) {
		return -1, fmt.Errorf("%s: a symbolic link is in its path since dsh checked it; refusing to follow it (is a world writing a directory above it?)", p)
	}
	if err != nil {
		return -1, fmt.Errorf("%s: %w", p, err)
	}
	return fd, nil
}

// beneath is how every protected path is resolved: inside the workspace,
// through no symbolic link.
const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

func openBeneath(root int, rel string, flags int) (int, error) {
	return unix.Openat2(root, rel, &unix.OpenHow{Flags: uint64(flags | unix.O_NOFOLLOW | unix.O_CLOEXEC), Resolve: beneath})
}

// protectError is a protected path entry that cannot be made read-only.
func protectError(entry string, err error) error {
	return fmt.Errorf("protected path %s: %w; dsh must be able to make it read-only (give dsh's user write access to the workspace, or remove the entry from sandbox.protected)", entry, err)
}

// missingPath is the first missing component of a protected path entry,
// where a placeholder is to be made (makePlaceholders).
type missingPath struct {
	rel, entry string
	dir        bool
	// found is another world's placeholder at rel, which this one adopts
	// rather than makes (adoptable).
	found *fileID
}

// resolve walks entry's components and records the mounts it needs, and
// in missing the placeholder it needs.
func (p *Protection) resolve(root int, entry string, want map[string]bool, missing *[]missingPath) error {
	isDir := strings.HasSuffix(entry, "/")
	comps := strings.Split(strings.TrimSuffix(entry, "/"), "/")
	for i := range comps {
		rel := strings.Join(comps[:i+1], "/")
		if want[rel] {
			return nil // read-only already, with everything below
		}
		last := i == len(comps)-1
		var st unix.Stat_t
		fd, err := openBeneath(root, rel, unix.O_PATH)
		if err == nil {
			err = unix.Fstat(fd, &st)
			unix.Close(fd)
		}
		switch {
		case errors.Is(err, unix.ENOENT):
			// Read-only with everything below, once made.
			*missing = append(*missing, missingPath{rel: rel, entry: entry, dir: isDir || !last})
			want[rel] = true
			return nil
		case errors.Is(err, unix.ELOOP) || err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK:
			target, _ := os.Readlink(filepath.Join(p.ws, rel))
			return &linkError{rel: rel, ws: p.ws, target: target}
		case err != nil:
			return fmt.Errorf("%s in the workspace %s: %w", rel, p.ws, err)
		}
		if id, ok := p.adoptable(root, rel, st.Mode); ok {
			// Another world's placeholder: read-only with everything
			// below, as in that world, and removed by whichever closes
			// last.
			*missing = append(*missing, missingPath{rel: rel, entry: entry, dir: st.Mode&unix.S_IFMT == unix.S_IFDIR, found: &id})
			want[rel] = true
			return nil
		}
		switch {
		case last || st.Mode&unix.S_IFMT != unix.S_IFDIR:
			// The path itself, or a file where its directory would be.
			want[rel] = true
			return nil
		default:
			want[rel] = false
		}
	}
	return nil
}

// pinParents pins each directory between the workspace and rel (a
// mask's real path): a mount point no world can rename. It stops at the
// first that is missing or no directory (no mask is mounted through it
// either), and refuses a link: rel had none when it was resolved, so a
// world put one there since.
func (p *Protection) pinParents(root int, rel string, want map[string]bool) error {
	comps := strings.Split(rel, "/")
	for i := 1; i < len(comps); i++ {
		dir := strings.Join(comps[:i], "/")
		if want[dir] {
			return nil // read-only, with everything below
		}
		fd, err := openBeneath(root, dir, unix.O_PATH|unix.O_DIRECTORY)
		if errors.Is(err, unix.ELOOP) {
			target, _ := os.Readlink(filepath.Join(p.ws, dir))
			return &linkError{rel: dir, ws: p.ws, target: target}
		}
		if err != nil {
			return nil
		}
		unix.Close(fd)
		want[dir] = false
	}
	return nil
}

// linkError is a symbolic link on a protected path.
type linkError struct{ rel, ws, target string }

func (e *linkError) Error() string {
	return fmt.Sprintf("%s in the workspace %s is a symbolic link (to %q): dsh cannot make it read-only without following it, and a world could replace the link", e.rel, e.ws, e.target)
}

// errCannotCreate is a placeholder the world could not create either:
// the workspace's file system is read-only, or (worldIsCaller) this
// process, whose ids the world has, may not write the directory.
var errCannotCreate = errors.New("the world cannot create it either")

// makePlaceholders makes a placeholder at each missing path. All are
// written down in the journal first, in one write: a dsh that dies from
// here on leaves their record to the next start; and once made, with
// their identities, in another. One the world could not create either
// gets no mount.
func (p *Protection) makePlaceholders(root int, missing []missingPath, want map[string]bool) error {
	if len(missing) == 0 {
		return nil
	}
	planned := make([]journalEntry, len(missing))
	for i, m := range missing {
		planned[i] = journalEntry{Rel: m.rel, Dir: m.dir}
	}
	if err := p.journal.add(planned...); err != nil {
		return err
	}
	var madeErr error
	for _, m := range missing {
		if m.found != nil {
			p.made = append(p.made, placeholder{rel: m.rel, dir: m.dir, content: placeholderContent[m.rel], dev: m.found.dev, ino: m.found.ino, born: m.found.born})
			continue
		}
		err := p.makePlaceholder(root, m.rel, m.dir)
		if errors.Is(err, errCannotCreate) {
			delete(want, m.rel)
		} else if err != nil {
			madeErr = protectError(m.entry, err)
			break
		}
	}
	var made []journalEntry
	for _, ph := range p.made {
		if !ph.unknown {
			made = append(made, journalEntry{Rel: ph.rel, Made: true, Dev: ph.dev, Ino: ph.ino, Born: ph.born})
		}
	}
	return errors.Join(madeErr, p.journal.add(made...))
}

// makePlaceholder makes an empty directory or file at rel, whose parent
// exists (it was just resolved beneath the workspace).
func (p *Protection) makePlaceholder(root int, rel string, dir bool) error {
	parent, name := filepath.Split(rel)
	pfd := root
	if parent != "" {
		fd, err := openBeneath(root, strings.TrimSuffix(parent, "/"), unix.O_PATH|unix.O_DIRECTORY)
		if err != nil {
			return fmt.Errorf("%s in the workspace %s: %w", parent, p.ws, err)
		}
		defer unix.Close(fd)
		pfd = fd
	}
	var err error
	fd, made := -1, false
	if dir {
		if err = unix.Mkdirat(pfd, name, 0o755); err == nil {
			made = true
			fd, err = unix.Openat(pfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		}
	} else if fd, err = unix.Openat(pfd, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644); err == nil {
		made = true
		if c := placeholderContent[rel]; c != "" {
			_, err = unix.Write(fd, []byte(c))
		}
	}
	if made && err != nil {
		// Made, but not as it should be: Close removes what is still
		// empty, as with any placeholder whose identity is unknown.
		p.made = append(p.made, placeholder{rel: rel, dir: dir, content: placeholderContent[rel], unknown: true})
	}
	if fd >= 0 {
		// The mark by which another world on this workspace adopts it
		// (adoptable). A file system without user attributes gets none:
		// the placeholder is then removed only by the world that made it.
		if err == nil {
			_ = unix.Fsetxattr(fd, placeholderMark, []byte{'1'}, 0)
		}
		unix.Close(fd)
	}
	if errors.Is(err, unix.EROFS) || p.worldIsCaller && (errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM)) {
		return errCannotCreate // no world can create anything there either
	}
	if err != nil {
		return fmt.Errorf("making the read-only placeholder %s in the workspace %s: %w (dsh makes one where a protected path is missing, so that no world can create it)", rel, p.ws, err)
	}
	ph := placeholder{rel: rel, dir: dir, content: placeholderContent[rel]}
	st, err := statID(pfd, name, unix.AT_SYMLINK_NOFOLLOW)
	if err != nil {
		// Close removes it if it is still empty, as its record says.
		ph.unknown = true
		p.made = append(p.made, ph)
		return err
	}
	ph.dev, ph.ino, ph.born = st.dev, st.ino, st.born
	p.made = append(p.made, ph)
	return nil
}

// placeholderMark is the extended attribute every placeholder carries.
// No world can set it on a protected path: each is read-only in every
// world, and one that is missing gets a placeholder before any world
// runs.
const placeholderMark = "user.dsh.placeholder"

// adoptable reports whether rel (of mode, as found) is another world's
// placeholder as it made it: marked (placeholderMark), and still the
// empty directory or the file with the placeholder's content. This
// world then adopts it, so that whichever world on the workspace closes
// last removes it; without that, a world that found it would keep it
// (not its own) and the world that made it could not remove it while
// the other held it. A marked path the user has since filled is the
// user's.
func (p *Protection) adoptable(root int, rel string, mode uint32) (fileID, bool) {
	kind := mode & unix.S_IFMT
	if kind != unix.S_IFDIR && kind != unix.S_IFREG {
		return fileID{}, false
	}
	fd, err := openBeneath(root, rel, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return fileID{}, false
	}
	defer unix.Close(fd)
	return pristine(fd, kind, placeholderContent[rel])
}

// pristine reports whether the file open at fd, of the kind (S_IFDIR
// or S_IFREG) it was found to be, is a placeholder as dsh made it:
// marked, and an empty directory or a file holding exactly content.
func pristine(fd int, kind uint32, content string) (fileID, bool) {
	if n, err := unix.Fgetxattr(fd, placeholderMark, make([]byte, 1)); err != nil || n != 1 {
		return fileID{}, false
	}
	id, err := statID(fd, "", unix.AT_EMPTY_PATH)
	if err != nil || uint32(id.mode)&unix.S_IFMT != kind {
		return fileID{}, false
	}
	if kind == unix.S_IFDIR {
		return id, emptyDir(fd)
	}
	if id.size != uint64(len(content)) {
		return fileID{}, false
	}
	b := make([]byte, len(content)+1)
	n, _ := unix.Pread(fd, b, 0)
	return id, string(b[:n]) == content
}

// IsPlaceholder reports whether the file at path is the placeholder of a
// missing protected path as dsh made it for a world that runs, or ran,
// there (an empty, marked file): not a file of the user's. dsh reads no
// configuration from one.
func IsPlaceholder(path string) bool {
	var st unix.Stat_t
	if unix.Lstat(path, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size != 0 {
		return false // a regular file: opening it has no side effect
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	_, ok := pristine(fd, unix.S_IFREG, "")
	return ok
}

// emptyDir reports whether the directory open at fd holds no entry.
func emptyDir(fd int) bool {
	buf := make([]byte, 4096)
	n, err := unix.ReadDirent(fd, buf)
	if err != nil {
		return false
	}
	_, _, names := unix.ParseDirent(buf[:n], -1, nil)
	return len(names) == 0 // ParseDirent leaves out . and ..
}

// fileID is what remove checks of a placeholder before removing it.
type fileID struct {
	dev, ino uint64
	born     int64 // birth time (ns); 0 where the file system keeps none
	mode     uint16
	size     uint64
}

// statID stats path under dirfd (flags as statx takes them).
func statID(dirfd int, path string, flags int) (fileID, error) {
	var st unix.Statx_t
	if err := unix.Statx(dirfd, path, flags, unix.STATX_TYPE|unix.STATX_INO|unix.STATX_SIZE|unix.STATX_BTIME, &st); err != nil {
		return fileID{}, err
	}
	id := fileID{dev: unix.Mkdev(st.Dev_major, st.Dev_minor), ino: st.Ino, mode: st.Mode, size: st.Size}
	if st.Mask&unix.STATX_BTIME != 0 {
		id.born = st.Btime.Sec*1e9 + int64(st.Btime.Nsec)
	}
	return id, nil
}

// hold takes a shared lock on a read-only path for the world's life: a
// world closing at the same time in the same workspace does not remove a
// placeholder this one still mounts.
func (p *Protection) hold(root int, rel string) error {
	fd, err := openBeneath(root, rel, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return fmt.Errorf("protected path %s in the workspace %s: %w", rel, p.ws, err)
	}
	f := os.NewFile(uintptr(fd), rel)
	if err := unix.Flock(fd, unix.LOCK_SH); err != nil {
		f.Close()
		return fmt.Errorf("locking protected path %s in the workspace %s: %w", rel, p.ws, err)
	}
	p.held = append(p.held, f)
	return nil
}

// Close removes the placeholders PrepareProtected made that are still
// the file (as it wrote it) or empty directory it made and that no other
// world holds, and then their journal. Call it once the world's
// processes are gone. Safe on a nil Protection.
func (p *Protection) Close() error {
	if p == nil {
		return nil
	}
	for _, f := range p.held {
		f.Close()
	}
	p.held = nil
	if err := p.removeMade(); err != nil {
		// The journal stays for the next start (ReapProtected) to try
		// again once this process is gone.
		p.journal.close()
		return err
	}
	return p.journal.remove()
}

func (p *Protection) removeMade() error {
	if len(p.made) == 0 {
		return nil
	}
	root, err := unix.Open(p.ws, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		p.made = nil
		return nil // the workspace is gone, and its placeholders with it
	}
	defer unix.Close(root)
	unlock, err := lockWorkspace(p.ws)
	if err != nil {
		return err
	}
	defer unlock()
	var errs []error
	for i := len(p.made) - 1; i >= 0; i-- {
		if err := p.remove(root, p.made[i]); err != nil {
			errs = append(errs, err)
		}
	}
	p.made = nil
	return errors.Join(errs...)
}

func (p *Protection) remove(root int, ph placeholder) error {
	fd, err := openBeneath(root, ph.rel, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return nil // moved or removed meanwhile: not ours to touch
	}
	defer unix.Close(fd)
	st, err := statID(fd, "", unix.AT_EMPTY_PATH)
	if err != nil || !ph.unknown && (st.dev != ph.dev || st.ino != ph.ino || st.born != ph.born) || !ph.dir && st.size != uint64(len(ph.content)) {
		return nil
	}
	if isDir := st.mode&unix.S_IFMT == unix.S_IFDIR; isDir != ph.dir || !isDir && st.mode&unix.S_IFMT != unix.S_IFREG {
		return nil // not the kind of thing dsh made there
	}
	if !ph.dir && ph.content != "" {
		b := make([]byte, len(ph.content)+1)
		if n, _ := unix.Pread(fd, b, 0); string(b[:n]) != ph.content {
			return nil
		}
	}
	if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		return nil // another world on this workspace mounts it
	}
	parent, name := filepath.Split(ph.rel)
	pfd := root
	if parent != "" {
		d, err := openBeneath(root, strings.TrimSuffix(parent, "/"), unix.O_PATH|unix.O_DIRECTORY)
		if err != nil {
			return nil
		}
		defer unix.Close(d)
		pfd = d
	}
	flags := 0
	if ph.dir {
		flags = unix.AT_REMOVEDIR
	}
	if err := unix.Unlinkat(pfd, name, flags); err != nil && !errors.Is(err, unix.ENOTEMPTY) && !errors.Is(err, unix.EEXIST) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("removing the placeholder %s from the workspace %s: %w", ph.rel, p.ws, err)
	}
	return nil
}

// lockWorkspace serializes PrepareProtected and Close of the worlds on
// one workspace, in every dsh process (an exclusive flock of the
// workspace directory): a world closing never removes a placeholder
// between another world's finding it and holding it.
func lockWorkspace(ws string) (unlock func(), err error) {
	fd, err := unix.Open(ws, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("protected paths: opening the workspace %s: %w", ws, err)
	}
	if err := unix.Flock(fd, unix.LOCK_EX); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("protected paths: locking the workspace %s: %w", ws, err)
	}
	return func() { unix.Close(fd) }, nil
}
