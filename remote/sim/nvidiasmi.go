package sim

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// Exit statuses of the real nvidia-smi that the fake one reproduces.
const (
	smiExitInvalidArg = 2  // bad option or unknown field
	smiExitGPULost    = 15 // "GPU is lost"
)

const smiInvalidArgs = "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n"

// smiOptions is a parsed nvidia-smi command line.
type smiOptions struct {
	helpQueryGPU, helpQueryApps, version, list, help bool
	queryGPU, queryApps                              string
	format                                           string
	formatSet                                        bool
	loop                                             time.Duration
	ids                                              []int
}

// parseSMIArgs accepts the spellings the real tool does: "--opt=value",
// "--opt value", "-l N", "-lms N", "-i LIST".
func parseSMIArgs(args []string) (smiOptions, error) {
	var o smiOptions
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(a, "=")
		next := func() (string, bool) {
			if hasVal {
				return val, true
			}
			if i+1 < len(args) {
				i++
				return args[i], true
			}
			return "", false
		}
		switch name {
		case "--help-query-gpu":
			o.helpQueryGPU = true
		case "--help-query-compute-apps":
			o.helpQueryApps = true
		case "--version":
			o.version = true
		case "-L", "--list-gpus":
			o.list = true
		case "-h", "--help":
			o.help = true
		case "--query-gpu", "--query-compute-apps":
			v, ok := next()
			if !ok || v == "" {
				return o, fmt.Errorf("%s needs a field list", name)
			}
			if name == "--query-gpu" {
				o.queryGPU = v
			} else {
				o.queryApps = v
			}
		case "--format":
			v, ok := next()
			if !ok {
				return o, fmt.Errorf("--format needs a value")
			}
			o.format, o.formatSet = v, true
		case "-l", "--loop", "-lms", "--loop-ms":
			unit := time.Second
			if name == "-lms" || name == "--loop-ms" {
				unit = time.Millisecond
			}
			n := 5 // "-l" alone: the real tool's default of 5 s
			if hasVal || (i+1 < len(args) && isDigits(args[i+1])) {
				v, _ := next()
				k, err := strconv.Atoi(v)
				if err != nil || k <= 0 {
					return o, fmt.Errorf("bad loop interval %q", v)
				}
				n = k
			} else if unit == time.Millisecond {
				return o, fmt.Errorf("%s needs an interval", name)
			}
			o.loop = time.Duration(n) * unit
		case "-i", "--id":
			v, ok := next()
			if !ok {
				return o, fmt.Errorf("-i needs a GPU index")
			}
			for _, s := range strings.Split(v, ",") {
				k, err := strconv.Atoi(strings.TrimSpace(s))
				if err != nil || k < 0 {
					return o, fmt.Errorf("bad GPU id %q", s)
				}
				o.ids = append(o.ids, k)
			}
		default:
			return o, fmt.Errorf("unknown option %q", a)
		}
	}
	return o, nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// smiEnv is what the nvidia-smi role runs against.
type smiEnv struct {
	dir    string // sim dir ("" for a bare run: 8 idle GPUs)
	stdout io.Writer
	now    func() time.Time
	tick   func() // test hook: called after every loop iteration
}

// runNvidiaSMI is the fake nvidia-smi. It returns the exit status.
func runNvidiaSMI(ctx context.Context, args []string, e smiEnv) int {
	if e.now == nil {
		e.now = time.Now
	}
	out := e.stdout
	o, err := parseSMIArgs(args)
	if err != nil {
		io.WriteString(out, smiInvalidArgs)
		return smiExitInvalidArg
	}
	cfg, err := readConfig(e.dir)
	if err != nil {
		fmt.Fprintf(out, "Failed to initialize NVML: Unknown Error\n")
		return 255
	}
	var c *Capture
	if cfg.GPUCapture != "" {
		c, err = LoadCapture(cfg.GPUCapture)
	} else {
		c, err = defaultCapture()
	}
	if err != nil {
		fmt.Fprintf(out, "Failed to initialize NVML: Unknown Error\n")
		return 255
	}
	model := &gpuModel{cap: c, n: cfg.GPUs, replay: cfg.GPUCapture != "",
		rng: rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(e.now().UnixNano())))}

	switch {
	case o.help:
		io.WriteString(out, smiUsage)
		return 0
	case o.helpQueryGPU:
		io.WriteString(out, c.HelpQueryGPU)
		return 0
	case o.helpQueryApps:
		io.WriteString(out, appsHelp(c))
		return 0
	case o.version:
		io.WriteString(out, c.Version)
		return 0
	}
	for _, id := range o.ids {
		if id >= cfg.GPUs {
			io.WriteString(out, "No devices were found\n")
			return 6
		}
	}

	// Validate the query before touching the "driver", as the real tool does.
	var q query
	switch {
	case o.queryGPU != "" && o.queryApps != "", (o.queryGPU != "" || o.queryApps != "") && !o.formatSet:
		io.WriteString(out, smiInvalidArgs)
		return smiExitInvalidArg
	case o.queryGPU != "":
		q, err = newQuery(o.queryGPU, o.format, c.Fields, c.Units)
	case o.queryApps != "":
		q, err = newQuery(o.queryApps, o.format, appsFields(c), map[string]string{"used_gpu_memory": "MiB"})
	}
	if err != nil {
		io.WriteString(out, err.Error())
		return smiExitInvalidArg
	}

	first := true
	for {
		var buf bytes.Buffer
		printed := false
		if f := readFaults(e.dir); !f.Stall {
			now := e.now()
			hv := readHostView(e.dir, now)
			rows := model.rows(now, hv, f)
			if f.HandleLostGPU != nil && *f.HandleLostGPU >= 0 && *f.HandleLostGPU < len(rows) {
				bus := strings.TrimPrefix(rows[*f.HandleLostGPU]["pci.bus_id"], "0000")
				fmt.Fprintf(&buf, "Unable to determine the device handle for GPU %s: GPU is lost. Reboot the system to recover this GPU\n", bus)
				out.Write(buf.Bytes())
				return smiExitGPULost
			}
			rows = selectIDs(rows, o.ids)
			switch {
			case o.queryGPU != "":
				q.write(&buf, rows, first)
			case o.queryApps != "":
				q.write(&buf, appRows(rows, hv.procs(model.n)), first)
			case o.list:
				for _, r := range rows {
					fmt.Fprintf(&buf, "GPU %s: %s (UUID: %s)\n", r["index"], r["name"], r["uuid"])
				}
			default:
				writeTable(&buf, now, rows, appRows(rows, hv.procs(model.n)), c)
			}
			printed, first = true, false
		}
		if _, err := out.Write(buf.Bytes()); err != nil {
			return 0 // reader went away
		}
		if e.tick != nil {
			e.tick()
		}
		if printed && o.loop == 0 {
			return 0
		}
		wait := o.loop
		if wait == 0 {
			wait = 200 * time.Millisecond // stalled one-shot: poll for the fault to clear
		}
		select {
		case <-ctx.Done():
			return 0
		case <-time.After(wait):
		}
	}
}

func selectIDs(rows []gpuRow, ids []int) []gpuRow {
	if len(ids) == 0 {
		return rows
	}
	out := make([]gpuRow, 0, len(ids))
	for _, id := range ids {
		out = append(out, rows[id])
	}
	return out
}

// query is a validated --query-* field list and --format.
type query struct {
	fields   []string // canonical names
	units    map[string]string
	noheader bool
	nounits  bool
}

func newQuery(list, format string, known, units map[string]string) (query, error) {
	q := query{units: units}
	csv := false
	for _, opt := range strings.Split(format, ",") {
		switch strings.TrimSpace(opt) {
		case "csv":
			csv = true
		case "noheader":
			q.noheader = true
		case "nounits":
			q.nounits = true
		default:
			return q, fmt.Errorf("%s", smiInvalidArgs)
		}
	}
	if !csv {
		return q, fmt.Errorf("%s", smiInvalidArgs)
	}
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		canon, ok := known[f]
		if !ok {
			// The real message and its trailing blank line, on stdout.
			return q, fmt.Errorf("Field \"%s\" is not a valid field to query.\n\n", f)
		}
		q.fields = append(q.fields, canon)
	}
	return q, nil
}

func (q query) write(buf *bytes.Buffer, rows []gpuRow, header bool) {
	if header && !q.noheader {
		for i, f := range q.fields {
			if i > 0 {
				buf.WriteString(", ")
			}
			buf.WriteString(f)
			if u := q.units[f]; u != "" {
				buf.WriteString(" [" + u + "]")
			}
		}
		buf.WriteByte('\n')
	}
	for _, r := range rows {
		for i, f := range q.fields {
			if i > 0 {
				buf.WriteString(", ")
			}
			v, ok := r[f]
			if !ok {
				v = "[N/A]"
			}
			buf.WriteString(v)
			if u := q.units[f]; u != "" && !q.nounits && isNumber(v) {
				buf.WriteString(" " + u)
			}
		}
		buf.WriteByte('\n')
	}
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// Compute-apps fields and their aliases (nvidia-smi --help-query-compute-apps,
// driver 590). Used when a capture lacks that section.
var defaultAppsFields = map[string]string{
	"timestamp": "timestamp", "gpu_name": "gpu_name", "gpu_bus_id": "gpu_bus_id",
	"gpu_serial": "gpu_serial", "gpu_uuid": "gpu_uuid", "pid": "pid",
	"process_name": "process_name", "name": "process_name",
	"used_gpu_memory": "used_gpu_memory", "used_memory": "used_gpu_memory",
}

func appsFields(c *Capture) map[string]string {
	if c.HelpQueryComputeApps != "" {
		if m := parseHelpFields(c.HelpQueryComputeApps); len(m) > 0 {
			return m
		}
	}
	return defaultAppsFields
}

func appsHelp(c *Capture) string {
	if c.HelpQueryComputeApps != "" {
		return c.HelpQueryComputeApps
	}
	h, _ := defaultCapture()
	if h != nil {
		return h.HelpQueryComputeApps
	}
	return ""
}

// appRows lists the processes holding memory on the given GPUs, one row per
// process and GPU: the fake server's ranks (named like SGLang's per-rank
// scheduler processes) or its workers, and orphaned workers. A row's memory
// is capped so a GPU's rows never add up to more than its memory.used.
func appRows(gpus []gpuRow, procs [][]gpuProc) []gpuRow {
	var out []gpuRow
	for _, g := range gpus {
		i, _ := strconv.Atoi(g["index"])
		left, err := strconv.ParseInt(g["memory.used"], 10, 64)
		if i < 0 || i >= len(procs) || err != nil {
			continue // a lost GPU lists nothing
		}
		for _, p := range procs[i] {
			mem := min(p.memMiB, left)
			if mem <= 0 {
				continue
			}
			left -= mem
			out = append(out, gpuRow{
				"timestamp": g["timestamp"], "gpu_name": g["name"], "gpu_bus_id": g["pci.bus_id"],
				"gpu_serial": g["serial"], "gpu_uuid": g["uuid"], "pid": strconv.Itoa(p.pid),
				"process_name":    p.name,
				"used_gpu_memory": strconv.FormatInt(mem, 10),
				"index":           g["index"],
			})
		}
	}
	return out
}

const smiUsage = `NVIDIA System Management Interface -- flightdeck simulated host

nvidia-smi [OPTION1 [ARG1]] [OPTION2 [ARG2]] ...

    -h,   --help                Print usage information and exit.
          --version             Print version information and exit.
    -L,   --list-gpus           Display a list of GPUs connected to the system.
    -i,   --id=                 Target a specific GPU.
    -l,   --loop=               Probe until Ctrl+C at specified second interval.
    -lms, --loop-ms=            Probe until Ctrl+C at specified millisecond interval.
    --query-gpu=                Information about GPU (see --help-query-gpu).
    --query-compute-apps=       List of active compute processes.
    --format=                   csv[,noheader][,nounits]
`
