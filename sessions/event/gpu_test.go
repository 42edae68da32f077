package event

import (
	"slices"
	"testing"
)

func named(i int, name, bus string) GPU {
	g := AbsentGPU(i)
	g.Name, g.BusID = Text{S: name, Status: CellOK}, Text{S: bus, Status: CellOK}
	g.UtilGPUPct = Reading{Value: 97, Status: CellOK}
	return g
}

// A GPU whose handle fails (Missing) is counted, and WithMissing keeps
// its row, lost, under the name and bus id an earlier sample gave it; one
// never read has no name. A row listed in Missing too, or an index listed
// twice (a broken agent), counts once.
func TestGPUSampleCountsMissing(t *testing.T) {
	prev := []GPU{named(0, "NVIDIA H200", "00000000:18:00.0"), named(2, "NVIDIA H200", "00000000:38:00.0")}
	s := GPUSample{GPUs: []GPU{named(0, "NVIDIA H200", "00000000:18:00.0"), named(1, "NVIDIA H200", "00000000:28:00.0")},
		Missing: []int{2, 3, 3, 1}}
	if n := s.Count(); n != 4 {
		t.Errorf("Count %d, want 4", n)
	}
	all := s.WithMissing(prev)
	var idx []int
	for _, g := range all {
		idx = append(idx, g.Index)
	}
	if !slices.Equal(idx, []int{0, 1, 2, 3}) {
		t.Fatalf("rows %v, want 0-3", idx)
	}
	if g := all[2]; !g.Lost || g.Name.S != "NVIDIA H200" || g.BusID.S != "00000000:38:00.0" || g.UtilGPUPct.Status != CellAbsent {
		t.Errorf("GPU 2: %+v", g)
	}
	if g := all[3]; !g.Lost || g.Name.Status != CellAbsent || g.BusID.Status != CellAbsent {
		t.Errorf("GPU 3 (never read): %+v", g)
	}
	if all[1].Lost || all[1].UtilGPUPct.Value != 97 {
		t.Errorf("GPU 1 has a row: %+v", all[1])
	}
	// The next sample keeps what the last one remembered.
	if g := s.WithMissing(all)[2]; g.BusID.S != "00000000:38:00.0" {
		t.Errorf("GPU 2 forgot its bus: %+v", g)
	}
	plain := GPUSample{GPUs: prev}
	if plain.Count() != 2 || &plain.WithMissing(nil)[0] != &prev[0] {
		t.Error("a sample without Missing is its own rows")
	}
}
