package event

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestKindTable: every kind has a row with a unique kebab-case name that
// names it back, and no kind is both screen-only and journal-urgent.
func TestKindTable(t *testing.T) {
	kebab := regexp.MustCompile(`^[a-z]+(-[a-z]+)*$`)
	seen := map[string]Kind{}
	ks := Kinds()
	if len(ks) != NumKinds-1 {
		t.Fatalf("Kinds() has %d kinds, NumKinds is %d", len(ks), NumKinds)
	}
	for i, k := range ks {
		if k != Kind(i+1) {
			t.Errorf("Kinds()[%d] = %d", i, k)
		}
		info := k.Info()
		if !kebab.MatchString(info.Name) {
			t.Errorf("kind %d is named %q", k, info.Name)
		}
		if o, dup := seen[info.Name]; dup {
			t.Errorf("kinds %d and %d are both named %q", o, k, info.Name)
		}
		seen[info.Name] = k
		if got, ok := KindNamed(info.Name); !ok || got != k || k.String() != info.Name {
			t.Errorf("KindNamed(%q) = %d, %v; String %q", info.Name, got, ok, k.String())
		}
		if info.ScreenOnly && (info.Urgent || info.CatchUp != CatchIgnore) {
			t.Errorf("%s is screen-only, yet urgent or caught up: %+v", k, info)
		}
	}
	for _, k := range []Kind{0, Kind(NumKinds), 255} {
		if k.Info() != (KindInfo{}) || k.String() != "" {
			t.Errorf("kind %d has a row %+v", k, k.Info())
		}
	}
	if _, ok := KindNamed("gpu-power"); ok {
		t.Error(`KindNamed("gpu-power") found a kind`)
	}
}

// TestEveryPayloadTypeHasOneKind reads this package's source: each type
// with a Kind method returns its own constant, every constant is some
// type's, and each such type is sealed, so the table, the types and the
// exhaustiveness check (go-check-sumtype) agree.
func TestEveryPayloadTypeHasOneKind(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	kindOf := map[string]string{} // type -> its Kind constant
	sealed := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || len(fd.Recv.List) != 1 || fd.Name.Name != "Kind" && fd.Name.Name != "sealed" {
				continue
			}
			id, ok := fd.Recv.List[0].Type.(*ast.Ident)
			if !ok {
				t.Errorf("%s: method %s on a pointer receiver: payloads are values", f, fd.Name.Name)
				continue
			}
			switch fd.Name.Name {
			case "sealed":
				sealed[id.Name] = true
			case "Kind":
				ret, ok := fd.Body.List[0].(*ast.ReturnStmt)
				if !ok || len(fd.Body.List) != 1 || len(ret.Results) != 1 {
					t.Errorf("%s.Kind is not one return of a constant", id.Name)
					continue
				}
				c, ok := ret.Results[0].(*ast.Ident)
				if !ok {
					t.Errorf("%s.Kind returns %T", id.Name, ret.Results[0])
					continue
				}
				kindOf[id.Name] = c.Name
			}
		}
	}
	byConst := map[string]string{}
	for typ, c := range kindOf {
		if o, dup := byConst[c]; dup {
			t.Errorf("%s and %s both return %s", o, typ, c)
		}
		byConst[c] = typ
		if !sealed[typ] {
			t.Errorf("%s has a Kind but no sealed method", typ)
		}
	}
	for typ := range sealed {
		if _, ok := kindOf[typ]; !ok {
			t.Errorf("%s is sealed but has no Kind", typ)
		}
	}
	if len(kindOf) != NumKinds-1 {
		t.Errorf("%d payload types for %d kinds", len(kindOf), NumKinds-1)
	}
}
