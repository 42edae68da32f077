package hostwatch

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/fsnotify/fsnotify"
	ignore "github.com/sabhiram/go-gitignore"
)

// treeWatch counts the changes in a working tree outside .git that
// .gitignore does not ignore, through inotify (fsnotify): one watch per
// directory, up to max. Its goroutine only counts; count reads the total.
// A .gitignore is read when its directory is first watched and again when
// it changes; patterns are matched with go-gitignore (nested .gitignore
// files apply below their directory; .git/info/exclude at the top).
type treeWatch struct {
	top  string
	w    *fsnotify.Watcher // nil when inotify could not be used
	max  int
	done chan struct{}

	mu     sync.Mutex
	n      uint64
	dirs   int
	capped bool
	ign    map[string]*ignore.GitIgnore // by directory (relative to top, "" for it)
}

// watchTree starts watching the tree at top, with the exclude file
// (info/exclude) besides the .gitignore files. When inotify cannot be
// used at all (no instances left) the tree is capped at zero directories.
func watchTree(top, exclude string, max int) *treeWatch {
	t := &treeWatch{top: top, max: max, done: make(chan struct{}), ign: map[string]*ignore.GitIgnore{}}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.capped = true
		close(t.done)
		return t
	}
	t.w = w
	if gi, err := ignore.CompileIgnoreFile(exclude); err == nil {
		t.ign["\x00exclude"] = gi
	}
	t.mu.Lock()
	t.add(top)
	t.mu.Unlock()
	go t.loop()
	return t
}

// count returns the changes seen so far and whether directories were left
// unwatched.
func (t *treeWatch) count() (uint64, bool) {
	if t == nil {
		return 0, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n, t.capped
}

func (t *treeWatch) close() {
	if t.w != nil {
		t.w.Close()
		<-t.done
	}
}

func (t *treeWatch) loop() {
	defer close(t.done)
	for {
		select {
		case ev, ok := <-t.w.Events:
			if !ok {
				return
			}
			t.event(ev)
		case _, ok := <-t.w.Errors:
			if !ok {
				return
			}
			// An overflowed queue lost events: count it as a change.
			t.mu.Lock()
			t.n++
			t.mu.Unlock()
		}
	}
}

// event counts ev unless it is on an ignored path, and watches a new
// directory.
func (t *treeWatch) event(ev fsnotify.Event) {
	rel, err := filepath.Rel(t.top, ev.Name)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return
	}
	rel = filepath.ToSlash(rel)
	if rel == ".git" || strings.HasPrefix(rel, ".git/") {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	isDir := false
	if ev.Has(fsnotify.Create) {
		if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
			isDir = true
		}
	}
	if t.ignored(rel, isDir) {
		return
	}
	if filepath.Base(rel) == ".gitignore" {
		d := filepath.ToSlash(filepath.Dir(rel))
		if d == "." {
			d = ""
		}
		delete(t.ign, d)
		if gi, err := ignore.CompileIgnoreFile(ev.Name); err == nil {
			t.ign[d] = gi
		}
	}
	t.n++
	if isDir {
		t.add(ev.Name)
	}
}

// ignored reports whether .gitignore (or info/exclude) ignores rel (a
// slash path relative to the top). Call with t.mu held.
func (t *treeWatch) ignored(rel string, isDir bool) bool {
	if filepath.Base(rel) == ".git" {
		return true
	}
	match := func(gi *ignore.GitIgnore, p string) bool {
		return gi.MatchesPath(p) || (isDir && gi.MatchesPath(p+"/"))
	}
	if gi := t.ign["\x00exclude"]; gi != nil && match(gi, rel) {
		return true
	}
	// Each directory's .gitignore, from the top down, on the path below it.
	dir := ""
	rest := rel
	for {
		if gi := t.ign[dir]; gi != nil && match(gi, rest) {
			return true
		}
		i := strings.IndexByte(rest, '/')
		if i < 0 {
			return false
		}
		if dir == "" {
			dir = rest[:i]
		} else {
			dir += "/" + rest[:i]
		}
		rest = rest[i+1:]
	}
}

// add watches root and the directories below it that are not ignored, up
// to the cap. Call with t.mu held.
func (t *treeWatch) add(root string) {
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(t.top, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			rel = ""
		}
		if rel != "" && t.ignored(rel, true) {
			return filepath.SkipDir
		}
		if t.dirs >= t.max {
			t.capped = true
			return filepath.SkipAll
		}
		if err := t.w.Add(p); err != nil {
			// ENOSPC: the user's inotify watches are spent.
			t.capped = true
			return filepath.SkipAll
		}
		t.dirs++
		if gi, err := ignore.CompileIgnoreFile(filepath.Join(p, ".gitignore")); err == nil {
			t.ign[rel] = gi
		}
		return nil
	})
}
