package fabric

import (
	"reflect"
	"testing"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// pcieBox is a PCIe-only 4-GPU topology (two GPUs per switch, switches on
// two NUMA nodes) and one NIC, built by hand: the shape of the seeds'
// host, small enough to read. Parsed fixtures are tested with the parser.
func pcieBox() event.Topology {
	tok := [][]string{
		{"X", "PIX", "SYS", "SYS", "PXB"},
		{"PIX", "X", "SYS", "SYS", "PXB"},
		{"SYS", "SYS", "X", "NODE", "SYS"},
		{"SYS", "SYS", "NODE", "X", "SYS"},
		{"PXB", "PXB", "SYS", "SYS", "X"},
	}
	t := event.Topology{GPUs: 4}
	for _, n := range []string{"GPU0", "GPU1", "GPU2", "GPU3", "NIC0"} {
		t.Devices = append(t.Devices, event.TopoDevice{Name: n})
	}
	for _, row := range tok {
		var r []event.TopoLink
		for _, c := range row {
			r = append(r, event.TopoLink{Link: event.Link(c), Token: c})
		}
		t.Links = append(t.Links, r)
	}
	return t
}

func transports(p Plan) [][]Transport {
	var out [][]Transport
	for _, r := range p.Pairs {
		var row []Transport
		for _, c := range r {
			row = append(row, c.Transport)
		}
		out = append(out, row)
	}
	return out
}

func TestPredict(t *testing.T) {
	const (
		S = TransportSelf
		P = TransportP2P
		H = TransportSHM
		N = TransportNET
	)
	cases := []struct {
		name   string
		env    map[string]string
		cpu    string
		want   [][]Transport
		level  Level
		notes  int
		shmOff bool
	}{
		{"intel default: P2P up to PXB", nil, "GenuineIntel", [][]Transport{
			{S, P, H, H}, {P, S, H, H}, {H, H, S, H}, {H, H, H, S}}, LevelPXB, 0, false},
		{"AMD default: P2P up to SYS", nil, "AuthenticAMD", [][]Transport{
			{S, P, P, P}, {P, S, P, P}, {P, P, S, P}, {P, P, P, S}}, LevelSYS, 0, false},
		{"NCCL_P2P_LEVEL=SYS", map[string]string{"NCCL_P2P_LEVEL": "SYS"}, "", [][]Transport{
			{S, P, P, P}, {P, S, P, P}, {P, P, S, P}, {P, P, P, S}}, LevelSYS, 1, false},
		{"NCCL_P2P_LEVEL=PHB takes NODE", map[string]string{"NCCL_P2P_LEVEL": "phb"}, "GenuineIntel", [][]Transport{
			{S, P, H, H}, {P, S, H, H}, {H, H, S, P}, {H, H, P, S}}, LevelPHB, 1, false},
		{"legacy integer 4 is SYS", map[string]string{"NCCL_P2P_LEVEL": "4"}, "GenuineIntel", [][]Transport{
			{S, P, P, P}, {P, S, P, P}, {P, P, S, P}, {P, P, P, S}}, LevelSYS, 1, false},
		{"NCCL_P2P_DISABLE wins over the level", map[string]string{"NCCL_P2P_DISABLE": "1", "NCCL_P2P_LEVEL": "SYS"}, "", [][]Transport{
			{S, H, H, H}, {H, S, H, H}, {H, H, S, H}, {H, H, H, S}}, LevelLOC, 1, false},
		{"P2P and SHM off: NET", map[string]string{"NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1"}, "", [][]Transport{
			{S, N, N, N}, {N, S, N, N}, {N, N, S, N}, {N, N, N, S}}, LevelLOC, 2, true},
		{"a level NCCL does not know keeps the default", map[string]string{"NCCL_P2P_LEVEL": "NVLINK"}, "GenuineIntel", [][]Transport{
			{S, P, H, H}, {P, S, H, H}, {H, H, S, H}, {H, H, H, S}}, LevelPXB, 1, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := Predict(pcieBox(), c.env, Options{CPUVendor: c.cpu})
			if got := transports(p); !reflect.DeepEqual(got, c.want) {
				t.Errorf("transports\n got %v\nwant %v", got, c.want)
			}
			if p.P2PLevel != c.level || len(p.Notes) != c.notes || p.SHM == c.shmOff {
				t.Errorf("level %v (%s), notes %q, SHM %v", p.P2PLevel, p.P2PFrom, p.Notes, p.SHM)
			}
			if p.InterNode != "NET/IB" {
				t.Errorf("inter-node %q with a NIC in the matrix", p.InterNode)
			}
		})
	}
}

func TestPredictUnknownAndBroken(t *testing.T) {
	top := pcieBox()
	top.Links[0][2] = event.TopoLink{Link: event.LinkUnknown, Token: "NV?X"}
	top.Links[1] = top.Links[1][:2] // a truncated row
	p := Predict(top, map[string]string{"NCCL_IB_DISABLE": "1"}, Options{CPUVendor: "GenuineIntel"})
	if pp, _ := p.Pair(0, 2); pp.Transport != TransportUnknown || pp.Token != "NV?X" {
		t.Errorf("unknown token: %+v", pp)
	}
	if pp, _ := p.Pair(1, 3); pp.Transport != TransportUnknown {
		t.Errorf("missing cell: %+v", pp)
	}
	if _, ok := p.Pair(0, 9); ok {
		t.Error("pair with GPU 9 of 4")
	}
	if p.InterNode != "NET/Socket" {
		t.Errorf("NCCL_IB_DISABLE=1: inter-node %q", p.InterNode)
	}
	if n := p.Counts(); n[TransportP2P] != 1 || n[TransportUnknown] != 3 || n[TransportSHM] != 2 {
		t.Errorf("counts %v", n)
	}
	if q := Predict(event.Topology{Err: "topo -m: truncated"}, nil, Options{}); q.GPUs != 0 || q.Pairs != nil {
		t.Errorf("a broken matrix predicted %+v", q)
	}
}

func TestParseP2PLevelAndTransportOf(t *testing.T) {
	for in, want := range map[string]Level{"LOC": LevelLOC, "nvl": LevelNVL, " PIX ": LevelPIX, "PXB": LevelPXB, "PHB": LevelPHB, "SYS": LevelSYS, "0": LevelLOC, "1": LevelPIX, "2": LevelPXB, "3": LevelPHB, "5": LevelSYS} {
		if got, err := ParseP2PLevel(in); err != nil || got != want {
			t.Errorf("ParseP2PLevel(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "NODE", "-1", "SYS2"} {
		if _, err := ParseP2PLevel(bad); err == nil {
			t.Errorf("ParseP2PLevel(%q) accepted", bad)
		}
	}
	for in, want := range map[string]Transport{"P2P/IPC": TransportP2P, "P2P/CUMEM/CE": TransportP2P, "SHM/direct/direct": TransportSHM, "NET/IB/0/GDRDMA": TransportNET, "NET/Socket/1": TransportNET, "via": TransportUnknown} {
		if got := TransportOf(in); got != want {
			t.Errorf("TransportOf(%q) = %v", in, got)
		}
	}
}
