package hostwatch

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// DefaultMaxDirs is GitPrint's default cap on the working-tree directories
// it watches (inotify watches are a per-user resource, 8192 by default on
// older kernels, shared with editors and IDEs).
const DefaultMaxDirs = 4096

// GitPrint fingerprints a git checkout the way `git log -1`, `git
// symbolic-ref HEAD` and `git status` see it, from stats and small reads:
//
//   - HEAD's content (the worktree's own HEAD when .git is a "gitdir:"
//     file), and the ref it names: the loose ref file's content, or
//     packed-refs' stat (mtime, size, inode) when there is none;
//   - the index's stat (any `git add`, commit, checkout, reset or stash
//     rewrites it);
//   - the working tree: an inotify watch (fsnotify) on every directory
//     outside .git that .gitignore does not ignore, counting the events
//     (writes, creates, removes, renames, chmods) on paths it does not
//     ignore. Up to maxDirs directories are watched; past the cap (or when
//     inotify refuses more watches) the others' files are seen only
//     through the index (a `git add`, or the index refresh of a `git
//     status` run elsewhere), and Capped says so.
//
// Its zero value is not usable: call NewGitPrint. Not safe for concurrent
// use (the tree's own goroutine only counts).
type GitPrint struct {
	path    string // as asked ("~/" expanded)
	maxDirs int
	loc     gitLoc
	locErr  string
	tree    *treeWatch
}

// gitLoc is where a checkout's parts are.
type gitLoc struct {
	top    string // the working tree's top level
	gitDir string // HEAD and index (the worktree's own for a linked worktree)
	common string // refs and packed-refs
}

// gitState is one fingerprint; its fields are compared one by one.
type gitState struct {
	gitdir string // the location, or why there is none
	head   string
	ref    string
	packed string
	index  string
	tree   uint64
	capped bool
}

// NewGitPrint prepares a fingerprint of the checkout at path (its top
// level or any directory inside it; "~/" is the home directory) watching
// at most maxDirs directories (≤ 0: DefaultMaxDirs). A path that is not
// (yet) a checkout is no error: its fingerprint says why, and changes when
// it becomes one.
func NewGitPrint(path string, maxDirs int) *GitPrint {
	if maxDirs <= 0 {
		maxDirs = DefaultMaxDirs
	}
	return &GitPrint{path: expandHome(path), maxDirs: maxDirs}
}

// Close stops the working tree's watch.
func (g *GitPrint) Close() {
	if g.tree != nil {
		g.tree.close()
		g.tree = nil
	}
}

// read takes one fingerprint.
func (g *GitPrint) read() gitState {
	loc, err := findGit(g.path)
	if err != nil {
		g.Close()
		g.locErr = err.Error()
		return gitState{gitdir: "error: " + err.Error()}
	}
	if loc != g.loc || g.tree == nil {
		g.Close()
		g.loc, g.locErr = loc, ""
		g.tree = watchTree(loc.top, filepath.Join(loc.common, "info", "exclude"), g.maxDirs)
	}
	s := gitState{gitdir: loc.top + "\x00" + loc.gitDir + "\x00" + loc.common}
	head, _ := readSmall(filepath.Join(loc.gitDir, "HEAD"), 4096)
	s.head = string(head)
	if ref, ok := strings.CutPrefix(strings.TrimSpace(s.head), "ref: "); ok && validRef(ref) {
		if b, err := readSmall(filepath.Join(loc.common, filepath.FromSlash(ref)), 4096); err == nil {
			s.ref = string(b)
		} else {
			s.ref = "-"
		}
	}
	s.packed = statKey(filepath.Join(loc.common, "packed-refs"))
	s.index = statKey(filepath.Join(loc.gitDir, "index"))
	s.tree, s.capped = g.tree.count()
	return s
}

// diff names the fields that differ between a and b ("" when none).
func (a gitState) diff(b gitState) string {
	var why []string
	add := func(differs bool, name string) {
		if differs {
			why = append(why, name)
		}
	}
	add(a.gitdir != b.gitdir, "gitdir")
	add(a.head != b.head, "head")
	add(a.ref != b.ref, "ref")
	add(a.packed != b.packed, "packed-refs")
	add(a.index != b.index, "index")
	add(a.tree != b.tree || a.capped != b.capped, "tree")
	return strings.Join(why, ",")
}

// findGit finds the checkout that contains dir, as git does: the nearest
// directory with a .git directory or "gitdir:" file, and its common
// directory (the "commondir" file of a linked worktree).
func findGit(dir string) (gitLoc, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return gitLoc{}, err
	}
	if fi, err := os.Stat(abs); err != nil {
		return gitLoc{}, fmt.Errorf("checkout %s: %w", dir, err)
	} else if !fi.IsDir() {
		return gitLoc{}, fmt.Errorf("checkout %s: not a directory", dir)
	}
	for d := abs; ; {
		dotgit := filepath.Join(d, ".git")
		fi, err := os.Stat(dotgit)
		switch {
		case err == nil && fi.IsDir():
			return gitLoc{top: d, gitDir: dotgit, common: commonDir(dotgit)}, nil
		case err == nil && fi.Mode().IsRegular():
			b, err := readSmall(dotgit, 4096)
			if err != nil {
				return gitLoc{}, err
			}
			gd, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
			if !ok {
				return gitLoc{}, fmt.Errorf("%s: not a gitdir file", dotgit)
			}
			if !filepath.IsAbs(gd) {
				gd = filepath.Join(d, gd)
			}
			return gitLoc{top: d, gitDir: gd, common: commonDir(gd)}, nil
		}
		up := filepath.Dir(d)
		if up == d {
			return gitLoc{}, fmt.Errorf("%s: not a git repository (or any of the parent directories)", dir)
		}
		d = up
	}
}

// commonDir is gitDir's "commondir" (relative to gitDir), or gitDir.
func commonDir(gitDir string) string {
	b, err := readSmall(filepath.Join(gitDir, "commondir"), 4096)
	if err != nil {
		return gitDir
	}
	c := strings.TrimSpace(string(b))
	if !filepath.IsAbs(c) {
		c = filepath.Join(gitDir, c)
	}
	return filepath.Clean(c)
}

// validRef keeps HEAD's ref inside the refs directory.
func validRef(ref string) bool {
	return strings.HasPrefix(ref, "refs/") && !strings.Contains(ref, "..") && !strings.ContainsRune(ref, 0)
}

// readSmall reads at most limit bytes of a file.
func readSmall(name string, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	_, err = io.Copy(&buf, io.LimitReader(f, limit))
	return buf.Bytes(), err
}

// statKey is a file's "mtime size inode" (mtime in ns), or why not.
func statKey(name string) string {
	fi, err := os.Stat(name)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "-"
		}
		return "error: " + err.Error()
	}
	var ino uint64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = st.Ino
	}
	return fmt.Sprintf("%d %d %d", fi.ModTime().UnixNano(), fi.Size(), ino)
}

// expandHome expands a leading "~" or "~/" to the home directory.
func expandHome(p string) string {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return p
	}
	return filepath.Join(home, strings.TrimPrefix(p, "~"))
}
