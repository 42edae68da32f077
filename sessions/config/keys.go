package config

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// position is where a key first appears in a file; 1-based.
type position struct{ line, col int }

// keyIndex maps every key path in a document (table headers, dotted keys,
// keys inside inline tables, and each of their prefixes) to where it first
// appears, so that semantic errors found after decoding can name a line.
type keyIndex struct {
	pos        map[string]position
	lineStarts []int // byte offset at which each line starts
}

// pathKey joins key parts with a byte TOML keys cannot hold unescaped, so
// that quoted keys with dots stay distinct.
func pathKey(parts []string) string { return strings.Join(parts, "\x00") }

// indexKeys walks data with go-toml's unstable parser. It indexes what it
// can; a syntax error (already reported by the decoder) ends the walk.
func indexKeys(data []byte) *keyIndex {
	idx := &keyIndex{pos: map[string]position{}, lineStarts: []int{0}}
	for i, c := range data {
		if c == '\n' {
			idx.lineStarts = append(idx.lineStarts, i+1)
		}
	}
	var p unstable.Parser
	p.Reset(data)
	var table []string
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = idx.addKey(nil, e.Key())
		case unstable.KeyValue:
			idx.addKeyValue(table, e)
		}
	}
	return idx
}

// addKey records the parts of a (dotted) key under prefix and returns the
// full path.
func (idx *keyIndex) addKey(prefix []string, it unstable.Iterator) []string {
	path := slices.Clone(prefix)
	for it.Next() {
		k := it.Node()
		path = append(path, string(k.Data))
		pk := pathKey(path)
		if _, ok := idx.pos[pk]; !ok {
			idx.pos[pk] = idx.at(int(k.Raw.Offset))
		}
	}
	return path
}

func (idx *keyIndex) addKeyValue(prefix []string, kv *unstable.Node) {
	path := idx.addKey(prefix, kv.Key())
	if v := kv.Value(); v.Kind == unstable.InlineTable {
		it := v.Children()
		for it.Next() {
			if c := it.Node(); c.Kind == unstable.KeyValue {
				idx.addKeyValue(path, c)
			}
		}
	}
}

// at converts a byte offset to a position.
func (idx *keyIndex) at(offset int) position {
	line := sort.Search(len(idx.lineStarts), func(i int) bool { return idx.lineStarts[i] > offset })
	return position{line: line, col: offset - idx.lineStarts[line-1] + 1}
}

// line returns the line of the key path, or of its longest prefix that
// appears in the file (a value that was left out is reported at its
// table), or 0.
func (idx *keyIndex) line(parts ...string) int {
	for n := len(parts); n > 0; n-- {
		if p, ok := idx.pos[pathKey(parts[:n])]; ok {
			return p.line
		}
	}
	return 0
}

// Keys each kind of table accepts, for "did you mean" hints.
var (
	topKeys      = []string{"defaults", "hosts", "profiles", "presets"}
	defaultsKeys = []string{"preset", "profile", "model", "tp", "port", "log_dir"}
	hostKeys     = []string{"target", "log_dir", "repo", "workdir", "preset", "profile", "model", "tp", "port"}
	profileKeys  = []string{"extends", "env", "unset"}
	presetKeys   = []string{"command", "server", "extra"}
)

// unknownKeyMsg describes an unknown key at path, with the keys its table
// accepts and the closest one when it looks like a typo.
func unknownKeyMsg(path []string) string {
	if len(path) == 0 {
		return "unknown key"
	}
	var valid []string
	switch {
	case len(path) == 1:
		valid = topKeys
	case len(path) == 2 && path[0] == "defaults":
		valid = defaultsKeys
	case len(path) == 3 && path[0] == "hosts":
		valid = hostKeys
	case len(path) == 3 && path[0] == "profiles":
		valid = profileKeys
	case len(path) == 3 && path[0] == "presets":
		valid = presetKeys
	default:
		return "unknown key"
	}
	bad := path[len(path)-1]
	msg := fmt.Sprintf("unknown key %q", bad)
	best, bestDist := "", 3
	for _, v := range valid {
		if d := editDistance(strings.ToLower(bad), v); d < bestDist {
			best, bestDist = v, d
		}
	}
	if best != "" {
		return msg + fmt.Sprintf(" (did you mean %q?)", best)
	}
	return msg + " (known: " + strings.Join(valid, ", ") + ")"
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
