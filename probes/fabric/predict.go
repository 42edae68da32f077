// Package fabric reads how a host's GPUs are connected and what NCCL makes
// of it: the `nvidia-smi topo -m` matrix and `nvidia-smi nvlink -s`, the
// transport NCCL will pick for each GPU pair under a launch's environment
// (Predict), and NCCL's own account of what it picked (its NCCL_DEBUG=INFO
// log lines).
package fabric

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// Transport is the transport NCCL sets up between two ranks.
type Transport string

const (
	// TransportSelf is a GPU with itself (the matrix's diagonal).
	TransportSelf Transport = "-"
	// TransportP2P is CUDA peer-to-peer over NVLink or PCIe (NCCL's
	// P2P/IPC, P2P/CUMEM, P2P/direct pointer).
	TransportP2P Transport = "P2P"
	// TransportSHM goes through host memory (NCCL's SHM): GPUs of one
	// node that P2P may not join.
	TransportSHM Transport = "SHM"
	// TransportNET goes through a network device (NCCL's NET/IB,
	// NET/Socket): ranks on different nodes, or one node with both P2P
	// and SHM disabled.
	TransportNET Transport = "NET"
	// TransportUnknown is a pair whose link the matrix did not give.
	TransportUnknown Transport = "?"
)

// Level is a path type in NCCL's order, nearest first: the threshold of
// NCCL_P2P_LEVEL and the class of a topology link. NCCL counts a path
// through host bridges inside one NUMA node (nvidia-smi's NODE) as PHB.
type Level int

const (
	LevelLOC Level = iota // the device itself; as a P2P level, never P2P
	LevelNVL              // NVLink
	LevelPIX              // at most one PCIe bridge
	LevelPXB              // several PCIe bridges, no host bridge
	LevelPHB              // a PCIe host bridge (nvidia-smi's PHB and NODE)
	LevelSYS              // across the SMP interconnect between NUMA nodes
)

var levelNames = [...]string{"LOC", "NVL", "PIX", "PXB", "PHB", "SYS"}

// String is NCCL's name of the level ("PXB").
func (l Level) String() string {
	if l < 0 || int(l) >= len(levelNames) {
		return "Level(" + strconv.Itoa(int(l)) + ")"
	}
	return levelNames[l]
}

// LinkLevel is the NCCL path type of a topology link, and false for a
// link it has none for (LinkUnknown).
func LinkLevel(k event.Link) (Level, bool) {
	switch k {
	case event.LinkSelf:
		return LevelLOC, true
	case event.LinkNVLink:
		return LevelNVL, true
	case event.LinkPIX:
		return LevelPIX, true
	case event.LinkPXB:
		return LevelPXB, true
	case event.LinkPHB, event.LinkNODE:
		return LevelPHB, true
	case event.LinkSYS:
		return LevelSYS, true
	}
	return 0, false
}

// ParseP2PLevel reads an NCCL_P2P_LEVEL value as NCCL does: a name (LOC,
// NVL, PIX, PXB, PHB, SYS; any case) or a legacy integer (0 LOC, 1 PIX,
// 2 PXB, 3 PHB, 4 and more SYS). Anything else is an error naming the
// value: NCCL then keeps its default and says so in its log.
func ParseP2PLevel(s string) (Level, error) {
	v := strings.TrimSpace(s)
	for i, n := range levelNames {
		if strings.EqualFold(v, n) {
			return Level(i), nil
		}
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return [...]Level{LevelLOC, LevelPIX, LevelPXB, LevelPHB, LevelSYS}[min(n, 4)], nil
	}
	return 0, fmt.Errorf("NCCL_P2P_LEVEL=%q: not LOC, NVL, PIX, PXB, PHB, SYS or 0-5", s)
}

// Options are what the prediction needs besides the topology and the
// environment.
type Options struct {
	// CPUVendor is the host CPU's vendor_id from /proc/cpuinfo
	// ("GenuineIntel", "AuthenticAMD") or its architecture ("aarch64");
	// "" when unknown. NCCL's default P2P level is PXB on Intel and ARM
	// CPUs and SYS on AMD's; unknown counts as PXB, and the plan says so.
	CPUVendor string
}

// PairPlan is the predicted transport between two GPUs.
type PairPlan struct {
	Transport Transport
	Link      event.Link // the matrix's link between them
	Token     string     // the matrix's cell as printed ("NV18", "SYS")
}

// Plan is what NCCL will use between the GPUs of one node for one
// launch's environment.
type Plan struct {
	// GPUs is how many GPUs the topology has; Pairs is GPUs×GPUs,
	// Pairs[i][j] between GPU i and GPU j.
	GPUs  int
	Pairs [][]PairPlan
	// P2PLevel is the farthest path P2P may take; P2PFrom says where it
	// came from ("NCCL_P2P_LEVEL=SYS", "NCCL_P2P_DISABLE=1", "NCCL's
	// default on GenuineIntel CPUs").
	P2PLevel Level
	P2PFrom  string
	// SHM is false when NCCL_SHM_DISABLE=1 takes host memory away.
	SHM bool
	// InterNode is the transport between nodes: "NET/IB" when the matrix
	// lists a NIC and NCCL_IB_DISABLE is not 1, else "NET/Socket".
	InterNode string
	// Notes are what the environment changed from NCCL's defaults, or
	// could not be read, one sentence each ("NCCL_P2P_LEVEL=SYS allows
	// P2P across the SMP interconnect between NUMA nodes").
	Notes []string
}

// Predict is the transport NCCL's rules pick for each GPU pair of t under
// env (the launch's environment variables): P2P when the pair's path is
// no farther than the P2P level (NCCL_P2P_DISABLE=1 and NCCL_P2P_LEVEL
// override the default, see Options), else SHM through host memory unless
// NCCL_SHM_DISABLE=1, else NET. A pair whose cell the matrix did not
// give is TransportUnknown. It is NCCL's path rule only: whether CUDA
// allows peer access on the platform (IOMMU, ACS) is not known here, and
// NCCL's log (its own account) is the final word. A topology with an
// error yields a Plan with no pairs.
func Predict(t event.Topology, env map[string]string, o Options) Plan {
	p := Plan{SHM: true}
	p.P2PLevel, p.P2PFrom = LevelPXB, "NCCL's default on Intel and ARM CPUs"
	switch v := strings.ToLower(o.CPUVendor); {
	case strings.Contains(v, "amd"):
		p.P2PLevel, p.P2PFrom = LevelSYS, "NCCL's default on AMD CPUs"
	case v == "":
		p.P2PFrom = "NCCL's default on Intel and ARM CPUs (the CPU's vendor is unknown; on AMD CPUs it is SYS)"
	}
	if v, ok := env["NCCL_P2P_DISABLE"]; ok && strings.TrimSpace(v) == "1" {
		p.P2PLevel, p.P2PFrom = LevelLOC, "NCCL_P2P_DISABLE=1"
		p.Notes = append(p.Notes, "NCCL_P2P_DISABLE=1 turns P2P off between all GPUs")
	} else if v, ok := env["NCCL_P2P_LEVEL"]; ok {
		if l, err := ParseP2PLevel(v); err != nil {
			p.Notes = append(p.Notes, err.Error()+"; NCCL keeps its default")
		} else {
			def := p.P2PLevel
			p.P2PLevel, p.P2PFrom = l, "NCCL_P2P_LEVEL="+v
			switch {
			case l > def && l == LevelSYS:
				p.Notes = append(p.Notes, "NCCL_P2P_LEVEL="+v+" allows P2P across the SMP interconnect between NUMA nodes")
			case l > def:
				p.Notes = append(p.Notes, "NCCL_P2P_LEVEL="+v+" allows P2P through "+l.String()+" paths, farther than the default "+def.String())
			case l < def:
				p.Notes = append(p.Notes, "NCCL_P2P_LEVEL="+v+" limits P2P to "+l.String()+" paths or nearer (the default is "+def.String()+")")
			}
		}
	}
	if v, ok := env["NCCL_SHM_DISABLE"]; ok && strings.TrimSpace(v) == "1" {
		p.SHM = false
		p.Notes = append(p.Notes, "NCCL_SHM_DISABLE=1: pairs without P2P go through the network")
	}
	p.InterNode = "NET/Socket"
	if len(t.Devices) > t.GPUs && !(strings.TrimSpace(env["NCCL_IB_DISABLE"]) == "1") {
		p.InterNode = "NET/IB"
	}
	if t.Err != "" || t.GPUs <= 0 || len(t.Links) < t.GPUs {
		return p
	}
	p.GPUs = t.GPUs
	p.Pairs = make([][]PairPlan, t.GPUs)
	for i := range p.Pairs {
		p.Pairs[i] = make([]PairPlan, t.GPUs)
		for j := range p.Pairs[i] {
			pp := PairPlan{Transport: TransportUnknown, Link: event.LinkUnknown}
			if j < len(t.Links[i]) {
				c := t.Links[i][j]
				pp.Link, pp.Token = c.Link, c.Token
			}
			p.Pairs[i][j] = pp
			if i == j {
				p.Pairs[i][j].Transport = TransportSelf
				continue
			}
			l, ok := LinkLevel(pp.Link)
			switch {
			case !ok:
			case l <= p.P2PLevel && p.P2PLevel > LevelLOC:
				p.Pairs[i][j].Transport = TransportP2P
			case p.SHM:
				p.Pairs[i][j].Transport = TransportSHM
			default:
				p.Pairs[i][j].Transport = TransportNET
			}
		}
	}
	return p
}

// Pair is the plan between GPUs a and b, and false when either is not a
// GPU of the plan.
func (p Plan) Pair(a, b int) (PairPlan, bool) {
	if a < 0 || b < 0 || a >= len(p.Pairs) || b >= len(p.Pairs[a]) {
		return PairPlan{}, false
	}
	return p.Pairs[a][b], true
}

// Counts is how many unordered GPU pairs (i < j) get each transport.
func (p Plan) Counts() map[Transport]int {
	n := map[Transport]int{}
	for i := range p.Pairs {
		for j := i + 1; j < len(p.Pairs[i]); j++ {
			n[p.Pairs[i][j].Transport]++
		}
	}
	return n
}

// TransportOf is the class of an NCCL log's transport as printed
// ("P2P/IPC", "P2P/CUMEM/CE", "SHM/direct/direct", "NET/IB/0/GDRDMA",
// "NET/Socket/1"), and TransportUnknown for anything else.
func TransportOf(printed string) Transport {
	head, _, _ := strings.Cut(strings.TrimSpace(printed), "/")
	switch strings.ToUpper(head) {
	case "P2P":
		return TransportP2P
	case "SHM":
		return TransportSHM
	case "NET", "COLLNET":
		return TransportNET
	}
	return TransportUnknown
}
