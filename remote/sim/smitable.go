package sim

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// writeTable prints the plain `nvidia-smi` summary in the 590-driver layout
// (column widths measured on the H200/H100 captures' default tables).
func writeTable(buf *bytes.Buffer, now time.Time, gpus, apps []gpuRow, c *Capture) {
	driver, cuda := "590.48.01", "13.1"
	for _, l := range strings.Split(c.Version, "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "DRIVER version":
			driver = strings.TrimSpace(v)
		case "CUDA Version":
			cuda = strings.TrimSpace(v)
		}
	}
	sep := "+-----------------------------------------+------------------------+----------------------+\n"
	fmt.Fprintf(buf, "%s       \n", now.Format("Mon Jan _2 15:04:05 2006"))
	buf.WriteString("+-----------------------------------------------------------------------------------------+\n")
	fmt.Fprintf(buf, "| %-88s|\n", fmt.Sprintf("NVIDIA-SMI %-22s Driver Version: %-14s CUDA Version: %s", driver, driver, cuda))
	buf.WriteString(sep)
	buf.WriteString("| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |\n")
	buf.WriteString("| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |\n")
	buf.WriteString("|                                         |                        |               MIG M. |\n")
	buf.WriteString("|=========================================+========================+======================|\n")
	for _, g := range gpus {
		writeTableGPU(buf, g)
		buf.WriteString(sep)
	}
	buf.WriteString("\n+-----------------------------------------------------------------------------------------+\n")
	buf.WriteString("| Processes:                                                                              |\n")
	buf.WriteString("|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |\n")
	buf.WriteString("|        ID   ID                                                               Usage      |\n")
	buf.WriteString("|=========================================================================================|\n")
	if len(apps) == 0 {
		buf.WriteString("|  No running processes found                                                             |\n")
	}
	for _, a := range apps {
		mem := a["used_gpu_memory"] + "MiB"
		name := a["process_name"]
		if w := 46 - len(mem) - 1; len(name) > w {
			name = "..." + name[len(name)-w+3:]
		}
		fmt.Fprintf(buf, "|%5s   N/A  N/A%16s      C   %-*s%s |\n", a["index"], a["pid"], 46-len(mem), name, mem)
	}
	buf.WriteString("+-----------------------------------------------------------------------------------------+\n")
}

func writeTableGPU(buf *bytes.Buffer, g gpuRow) {
	name := g["name"]
	if len(name) > 27 {
		name = name[:24] + "..."
	}
	pers := "Off"
	if g["persistence_mode"] == "Enabled" {
		pers = "On"
	}
	disp := "Off"
	if g["display_active"] == "Enabled" {
		disp = "On"
	}
	ecc := g["ecc.errors.uncorrected.volatile.total"]
	if ecc == "" || strings.HasPrefix(ecc, "[") {
		ecc = "N/A"
	}
	fmt.Fprintf(buf, "| %3s  %-30s%3s  |%19s %-3s |%21s |\n", g["index"], name, pers, g["pci.bus_id"], disp, ecc)

	fan := tableCell(g["fan.speed"], "%")
	temp := tableCell(g["temperature.gpu"], "C")
	pw := tableNum(g["power.draw"], "W")
	pl := tableNum(g["power.limit"], "W")
	used := tableCell(g["memory.used"], "MiB")
	total := tableCell(g["memory.total"], "MiB")
	util := tableCell(g["utilization.gpu"], "%")
	fmt.Fprintf(buf, "| %3s %5s%6s%16s / %5s |%11s / %9s |%8s%13s |\n",
		fan, temp, g["pstate"], pw, pl, used, total, util, g["compute_mode"])
	mig := g["mig.mode.current"]
	if strings.HasPrefix(mig, "[") {
		mig = "N/A"
	}
	fmt.Fprintf(buf, "|%41s|%24s|%21s |\n", "", "", mig)
}

// tableCell renders a value the way the summary table does: "52C", "0%",
// "N/A" for every non-value, "ERR!" for a lost GPU.
func tableCell(v, unit string) string {
	switch {
	case v == "[GPU is lost]":
		return "ERR!"
	case !isNumber(v):
		return "N/A"
	}
	return v + unit
}

// tableNum rounds a fractional reading (power) to whole units, as the table does.
func tableNum(v, unit string) string {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return tableCell(v, unit)
	}
	return strconv.Itoa(int(math.Round(f))) + unit
}
