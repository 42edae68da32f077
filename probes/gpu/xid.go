package gpu

// xidInfo is what the cockpit says about one Xid code.
type xidInfo struct {
	text     string
	critical bool
}

// xidMeanings are the Xid codes an inference host meets most, in short
// words, from NVIDIA's Xid catalog ("Xid Errors", docs.nvidia.com/deploy/
// xid-errors, and its per-code catalog for Ampere and newer GPUs, with the
// dynamic page retirement and row remapping guides for 48, 63, 64). A code
// is critical when the catalog's resolution is a GPU reset, a node reboot
// or hardware service (the GPU's state or memory is suspect until then);
// the others are faults of the application on the GPU (restart it), or
// are consequences of another error, and are warnings.
var xidMeanings = map[uint64]xidInfo{
	8:   {"GPU stopped processing (channel timeout)", false},
	13:  {"graphics engine exception (application fault, e.g. an illegal memory access)", false},
	31:  {"GPU memory page fault (application fault)", false},
	32:  {"invalid or corrupted push buffer stream", false},
	38:  {"driver firmware error", true},
	43:  {"GPU stopped processing (the application's channel was reset)", false},
	45:  {"preemptive cleanup after an earlier error (processes were killed)", false},
	46:  {"GPU stopped processing", true},
	48:  {"double-bit ECC error (DBE)", true},
	61:  {"internal micro-controller breakpoint or warning", false},
	62:  {"internal micro-controller halt", true},
	63:  {"ECC page retired or row remapping pending (reset the GPU to apply)", true},
	64:  {"ECC page retirement or row remapping failed", true},
	68:  {"video decoder (NVDEC) exception", false},
	69:  {"graphics engine class error", false},
	74:  {"NVLink error", true},
	79:  {"GPU has fallen off the bus", true},
	92:  {"high single-bit ECC error rate", true},
	94:  {"contained ECC error (the affected application must restart)", true},
	95:  {"uncontained ECC error (reset the GPU)", true},
	109: {"context switch timeout", false},
	119: {"GSP firmware RPC timeout", true},
	120: {"GSP firmware error", true},
	121: {"C2C (chip-to-chip) link error", true},
	140: {"unrecovered ECC error", true},
	154: {"GPU recovery action changed: the GPU needs a reset or the node a reboot", true},
}

// XidMeaning returns a short description of Xid code (an NVIDIA driver
// error event, as NVML's nvmlEventTypeXidCriticalError reports it) and
// whether it is critical: the GPU needs a reset, the node a reboot, or the
// hardware service, before its results can be trusted. Application faults
// (13, 31, 43, …) are not critical. An unknown code gives "unknown Xid, see
// NVIDIA's Xid catalog" and false.
func XidMeaning(code uint64) (text string, critical bool) {
	if m, ok := xidMeanings[code]; ok {
		return m.text, m.critical
	}
	return "unknown Xid, see NVIDIA's Xid catalog", false
}
