package event

// Link is how two devices of `nvidia-smi topo -m` are connected, nearest
// first: the matrix's own tokens (its legend). LinkUnknown is a token this
// build does not know (a newer driver's), kept as printed in TopoLink.Token,
// never guessed.
type Link string

const (
	LinkSelf    Link = "X"    // the device itself
	LinkNVLink  Link = "NV"   // a bonded set of NVLinks (token "NV#", # links)
	LinkPIX     Link = "PIX"  // at most a single PCIe bridge
	LinkPXB     Link = "PXB"  // multiple PCIe bridges, no host bridge
	LinkPHB     Link = "PHB"  // a PCIe host bridge (typically the CPU)
	LinkNODE    Link = "NODE" // PCIe and the interconnect between host bridges within a NUMA node
	LinkSYS     Link = "SYS"  // PCIe and the SMP interconnect between NUMA nodes (QPI/UPI)
	LinkUnknown Link = "?"    // a token this build does not know, or a missing cell
)

// TopoLink is one cell of the topology matrix.
type TopoLink struct {
	Link    Link
	NVLinks int    // the # of "NV#" (bonded NVLinks), 0 otherwise
	Token   string // the cell as printed ("NV18", "SYS", "N/A")
}

// TopoDevice is one row of the topology matrix: a GPU or a NIC.
type TopoDevice struct {
	Name string // "GPU0", "NIC0"
	// Port is a NIC's device name from the legend ("mlx5_0"), "" for a
	// GPU or when the legend did not name it.
	Port string
	// CPUAffinity, NUMAAffinity and GPUNUMAID are the GPU's affinity
	// columns as printed ("0-47,96-143", "0", "N/A"); "" when the column
	// is absent (older drivers have no GPU NUMA ID).
	CPUAffinity  string
	NUMAAffinity string
	GPUNUMAID    string
}

// NVLinkState is one NVLink of a GPU as `nvidia-smi nvlink -s` prints it.
type NVLinkState struct {
	Link     int     // the link number
	Active   bool    // false: "<inactive>"
	GBPerSec float64 // per-direction speed, GB/s; 0 when inactive
}

// GPULinks are one GPU's NVLinks from `nvidia-smi nvlink -s`.
type GPULinks struct {
	Index int    // GPU index
	UUID  string // "GPU-…", "" when not printed
	Links []NVLinkState
}

// Topology is the host's GPU topology: `nvidia-smi topo -m` (the matrix
// over GPUs then NICs, in the order printed) and `nvidia-smi nvlink -s`,
// read once per connection. It is an event payload.
type Topology struct {
	Devices []TopoDevice // GPUs first, then NICs, as the matrix's rows
	GPUs    int          // how many of Devices are GPUs
	// Links is the matrix, Links[i][j] between Devices[i] and Devices[j];
	// len(Devices) rows of len(Devices) cells.
	Links [][]TopoLink
	// NVLink holds each GPU's links; empty when the host has none.
	NVLink []GPULinks
	// NVLinkNote says why NVLink could not be read, sanitised ("Nvlink
	// queries are not supported for Devices in MIG mode"); "" when read or
	// when the GPUs have no NVLink.
	NVLinkNote string
	// Err says why the matrix could not be read, sanitised ("topo -m:
	// line 4: 7 cells for 9 columns"); Devices is then empty.
	Err string
}

// NCCLPath is one transport NCCL set up between two ranks, from an
// NCCL_DEBUG=INFO line "Channel 00/02 : 0[0] -> 1[1] via P2P/IPC".
type NCCLPath struct {
	Channel   int    // the channel number
	Channels  int    // how many channels the line said there are (the "/02"), 0 when not printed
	FromRank  int    // the sending rank
	FromGPU   int    // its CUDA device ([a]), -1 when not printed
	ToRank    int    // the receiving rank
	ToGPU     int    // its CUDA device, -1 when not printed
	Transport string // "P2P/IPC", "P2P/CUMEM", "P2P/direct pointer", "SHM", "SHM/direct/direct", "NET/IB/0", "NET/Socket/0", … as printed
	Line      string // the line as printed, sanitised
}

// NCCL is NCCL's own account of a server run, folded from the log's
// NCCL_DEBUG=INFO lines since the run started (the nccl-debug env
// profile sets NCCL_DEBUG=INFO): published after each batch of lines that
// changed it, and reset with the log. It is an event payload.
type NCCL struct {
	Version string // "2.21.5+cuda12.4" from "NCCL version 2.21.5+cuda12.4"
	// Env is each NCCL variable the log says the environment set
	// ("NCCL_P2P_LEVEL set by environment to SYS"): name to value.
	Env map[string]string
	// Paths are the distinct transports per (from rank, to rank,
	// transport), the first line of each kept; at most a few hundred.
	Paths []NCCLPath
	// Rings and Trees count the "Ring NN :" / "Trees [N] …" lines; Protocols
	// and Algorithms are what the log says was set or chosen ("LL", "Ring").
	Rings, Trees int
	Protocols    string
	Algorithms   string
	// Warnings are what does not match the topology's prediction or the
	// launch's environment ("ranks 0→4 use NET/Socket where IB was
	// expected", "NCCL_P2P_LEVEL=SYS forces P2P across the SMP link"),
	// filled by the cockpit, not by the parser.
	Warnings []string
}

// KernelLog reports whether the host's kernel log can be read for Xids and
// how: `journalctl -k` or `dmesg`, by the login user. It is published once
// per connection, after the history since the last boot was read. It is an
// event payload.
type KernelLog struct {
	Readable bool
	Via      string // "journalctl -k", "dmesg", "" when neither could be read
	// Reason says why it cannot be read, sanitised ("dmesg: read kernel
	// buffer failed: Operation not permitted"), and what to do
	// ("add the login user to the adm or systemd-journal group").
	Reason string
	// Xids is how many Xid lines the history since the last boot held.
	Xids int
}
