package gpu

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"strings"
	"testing"
	"testing/iotest"
)

const h200CapturePath = "testdata/nvidia-smi/captures/linux-x86_64__nvidia-h200__590.48.01.txt"

func readH200Capture(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(h200CapturePath)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// runJSONL runs WriteJSONL and returns its raw output.
func runJSONL(in []byte, fields []string) (string, error) {
	var out bytes.Buffer
	err := WriteJSONL(&out, bytes.NewReader(in), fields)
	return out.String(), err
}

// TestWriteJSONLRefusesBinary: binary input is refused before a line is
// read, with an error that names what it is; nothing is written.
func TestWriteJSONLRefusesBinary(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(readH200Capture(t))
	zw.Close()
	self, err := os.Executable() // this test binary: ELF or Mach-O
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	noNUL := bytes.Repeat([]byte("\x9c\xfa\xb1x\xc3("), 200) // invalid UTF-8, no NUL
	utf16 := []byte("\xff\xfei\x00n\x00d\x00e\x00x\x00\n\x00")
	cases := map[string]struct {
		in   []byte
		want string
	}{
		"gzip":             {gz.Bytes(), "gzip-compressed data; decompress it first"},
		"executable":       {exe, "binary data (NUL byte at offset"},
		"invalid UTF-8":    {noNUL, "binary data (683 of the first 1024 bytes are not UTF-8)"},
		"UTF-16":           {utf16, "UTF-16 text; convert it to UTF-8 first"},
		"NUL after header": {[]byte("index, name\n0, NVIDIA H200\x00\n"), "binary data (NUL byte at offset 26)"},
	}
	if ls, err := os.ReadFile("/bin/ls"); err == nil {
		cases["/bin/ls"] = struct {
			in   []byte
			want string
		}{ls, "binary data (NUL byte at offset"}
	}
	for name, c := range cases {
		out, err := runJSONL(c.in, nil)
		var ge *GarbledError
		if !errors.Is(err, ErrNotQueryGPU) || errors.As(err, &ge) {
			t.Errorf("%s: err = %v, want ErrNotQueryGPU alone", name, err)
			continue
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "not nvidia-smi --query-gpu CSV: ") || !strings.Contains(msg, c.want) {
			t.Errorf("%s: message %q, want %q", name, msg, c.want)
		}
		if out != "" {
			t.Errorf("%s: wrote %q", name, out)
		}
	}
}

// TestWriteJSONLTextIsNotBinary: a few bytes that are not UTF-8 (a Latin-1
// degree sign, a cut multi-byte rune at the edge of the sniffed KiB) do not
// make text binary.
func TestWriteJSONLTextIsNotBinary(t *testing.T) {
	latin1 := "index, name, temperature.gpu\n0, NVIDIA H200 \xb0, 45\n"
	recs, err := jsonl(t, []byte(latin1), nil)
	if err != nil || len(recs) != 1 || recs[0]["name"] != "NVIDIA H200 \ufffd" || recs[0]["temp_c"] != 45.0 {
		t.Errorf("latin-1: %v %v", recs, err)
	}
	// "é" (2 bytes) straddles byte 1024.
	long := "index, name\n0, " + strings.Repeat("x", sniffLen-len("index, name\n0, ")-1) + "é\n"
	if recs, err := jsonl(t, []byte(long), nil); err != nil || len(recs) != 1 {
		t.Errorf("rune at the sniff edge: %d records, %v", len(recs), err)
	}
}

// TestWriteJSONLNotQueryGPUText: text in which nothing is a header, a row or
// a failure (a README, nvidia-smi's help) is refused with what was expected;
// nothing is written, and the lines are still listed in the GarbledError.
func TestWriteJSONLNotQueryGPUText(t *testing.T) {
	capture := readH200Capture(t)
	readme, err := os.ReadFile("testdata/not-csv/fixtures-README.md")
	if err != nil {
		t.Fatal(err)
	}
	notice, err := os.ReadFile("testdata/nvidia-smi/captures/NOTICE.md")
	if err != nil {
		t.Fatal(err)
	}
	for name, in := range map[string][]byte{
		"README.md":                   readme,
		"NOTICE.md":                   notice,
		"help (-h)":                   captureSection(t, capture, "capabilities :: help (-h)"),
		"help-query-gpu":              captureSection(t, capture, "capabilities :: help-query-gpu"),
		"-q":                          captureSection(t, capture, "load :: query (-q)"),
		"default table":               captureSection(t, capture, "load :: nvidia-smi (default table)"),
		"prose with commas and names": []byte("Supported products:\n  compatible.\nindex, Enabled, Disabled\nname, P0\n"),
	} {
		out, err := runJSONL(in, nil)
		var ge *GarbledError
		if !errors.Is(err, ErrNotQueryGPU) || !errors.As(err, &ge) || ge.Count == 0 {
			t.Errorf("%s: err = %v, want ErrNotQueryGPU with the dropped lines", name, err)
			continue
		}
		msg := err.Error()
		for _, want := range []string{"not nvidia-smi --query-gpu CSV: no header line and no field list (--fields)", "expected nvidia-smi --query-gpu=index,name,… --format=csv output", "nvidia_gpu_exporter capture"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: message %q lacks %q", name, msg, want)
			}
		}
		if out != "" {
			t.Errorf("%s: wrote %q", name, out)
		}
	}

	// With a field list the reason names it.
	_, err = runJSONL(readme, []string{"index", "name"})
	if !errors.Is(err, ErrNotQueryGPU) || !strings.Contains(err.Error(), "no line is a header or a row of the 2 given fields") {
		t.Errorf("with fields: %v", err)
	}
}

// TestWriteJSONLFieldListIsNotCSV: a list of field names, one a line (the
// capture's "query-gpu field list"), gives no record: names flightdeck
// knows are one-column headers, the others are garbled, never rows.
func TestWriteJSONLFieldListIsNotCSV(t *testing.T) {
	list := captureSection(t, readH200Capture(t), "capabilities :: query-gpu field list")
	out, err := runJSONL(list, nil)
	var ge *GarbledError
	if !errors.As(err, &ge) || ge.Count < 150 || out != "" {
		t.Fatalf("out %q err %v", out, err)
	}
	if r := ge.Rows[0]; r.Line != 1 || r.Text != "timestamp" || !strings.Contains(r.Msg, "none that flightdeck reads") {
		t.Errorf("first dropped row %+v", r)
	}
}

// TestWriteJSONLCaptureNeedsLoadSection: a capture is read from its load
// query-gpu section only; one without it is refused.
func TestWriteJSONLCaptureNeedsLoadSection(t *testing.T) {
	capture := string(readH200Capture(t))
	i := strings.Index(capture, "# load :: query-gpu")
	if i < 0 {
		t.Fatal("no load section")
	}
	renamed := capture[:i] + "# load :: query-gpu-old" + capture[i+len("# load :: query-gpu"):]
	out, err := runJSONL([]byte(renamed), nil)
	if !errors.Is(err, ErrNotQueryGPU) || !strings.Contains(err.Error(), `capture without a "# load :: query-gpu" section`) || out != "" {
		t.Errorf("out %q err %v", out, err)
	}

	// A garbled row in the load section is reported with its line number
	// in the whole file.
	lineNo := strings.Count(capture[:i], "\n") + 5 // title, command, rule, header, first row
	lines := strings.Split(capture, "\n")
	if !strings.HasPrefix(lines[lineNo-1], "2026/07/03") {
		t.Fatalf("line %d is %.40q, not the load row", lineNo, lines[lineNo-1])
	}
	lines[lineNo-1] = "0, NVIDIA H200"
	_, err = runJSONL([]byte(strings.Join(lines, "\n")), nil)
	var ge *GarbledError
	if !errors.As(err, &ge) || errors.Is(err, ErrNotQueryGPU) || ge.Count != 1 || ge.Rows[0].Line != lineNo {
		t.Errorf("err %v, want line %d garbled", err, lineNo)
	}
}

// TestWriteJSONLCaptureInPieces: the banner and binary checks see the first
// KiB even when the reader hands it over a byte at a time.
func TestWriteJSONLCaptureInPieces(t *testing.T) {
	capture := readH200Capture(t)
	var whole, pieces bytes.Buffer
	if err := WriteJSONL(&whole, bytes.NewReader(capture), nil); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSONL(&pieces, iotest.OneByteReader(bytes.NewReader(capture)), nil); err != nil {
		t.Fatal(err)
	}
	if whole.String() != pieces.String() || strings.Count(whole.String(), "\n") != 1 {
		t.Errorf("whole %q\npieces %q", whole.String(), pieces.String())
	}
	gz := []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0}
	if err := WriteJSONL(&pieces, iotest.OneByteReader(bytes.NewReader(gz)), nil); !errors.Is(err, ErrNotQueryGPU) {
		t.Errorf("gzip in pieces: %v", err)
	}
	if err := WriteJSONL(&pieces, iotest.ErrReader(os.ErrPermission), nil); !errors.Is(err, os.ErrPermission) {
		t.Errorf("read error: %v", err)
	}
}

// TestWriteJSONLEmpty: empty input, or input of only blank and comment
// lines, writes nothing and is no error.
func TestWriteJSONLEmpty(t *testing.T) {
	for _, in := range []string{"", "\n", "\r\n\n  \n", "# source: x\n", "\xef\xbb\xbf"} {
		for _, fields := range [][]string{nil, {"index"}} {
			if out, err := runJSONL([]byte(in), fields); out != "" || err != nil {
				t.Errorf("%q %v: out %q err %v", in, fields, out, err)
			}
		}
	}
}

// TestWriteJSONLByteOrderMark: a leading UTF-8 BOM (Windows editors) does
// not hide the header.
func TestWriteJSONLByteOrderMark(t *testing.T) {
	recs, err := jsonl(t, []byte("\xef\xbb\xbfindex, name\r\n0, NVIDIA H200\r\n"), nil)
	if err != nil || len(recs) != 1 || recs[0]["index"] != 0.0 {
		t.Errorf("%v %v", recs, err)
	}
}

// TestWriteJSONLRowsMentioningNvidiaSMI: pasted command lines are skipped,
// but rows whose cells contain "nvidia-smi" (a host, a process) are rows.
func TestWriteJSONLRowsMentioningNvidiaSMI(t *testing.T) {
	in := "❯ sudo nvidia-smi --query-gpu=index,name,serial,hostname --format=csv\n" +
		"index, name, serial, hostname\n" +
		"0, NVIDIA H200, 1650124000001, gpu-nvidia-smi-01\n" +
		"1, NVIDIA H200, 1650124000002, nvidia-smi\n" +
		"root@nvidia-smi-box:~# watch -n1 'nvidia-smi --query-gpu=index,name'\n" +
		"2, nvidia-smi test, 1650124000003, nvidia-smi.lab\n"
	recs, err := jsonl(t, []byte(in), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		{"index": 0.0, "hostname": "gpu-nvidia-smi-01"},
		{"index": 1.0, "hostname": "nvidia-smi"},
		{"index": 2.0, "name": "nvidia-smi test", "hostname": "nvidia-smi.lab"},
	}
	if len(recs) != len(want) {
		t.Fatalf("records %v", recs)
	}
	for i := range want {
		assertRecord(t, "row", recs[i], want[i])
	}

	// Headerless, the name first.
	recs, err = jsonl(t, []byte("$ nvidia-smi --query-gpu=name,index --format=csv,noheader\nnvidia-smi, 0\nnvidia-smi-01, 1\n"), []string{"name", "index"})
	if err != nil || len(recs) != 2 || recs[0]["name"] != "nvidia-smi" || recs[1]["name"] != "nvidia-smi-01" {
		t.Errorf("headerless: %v %v", recs, err)
	}
}

func TestIsCommandEcho(t *testing.T) {
	for line, want := range map[string]bool{
		"$ nvidia-smi --query-gpu=index,name --format=csv":                        true,
		"❯ nvidia-smi --loop=1 --query-gpu=temperature.gpu --format=csv,noheader": true,
		"nvidia-smi":                                         true,
		"user@host:~$ sudo nvidia-smi -q":                    true,
		"user@gpu-nvidia-smi-01:~$ nvidia-smi":               true,
		"watch -n1 'nvidia-smi --query-gpu=index,name'":      true,
		"/usr/bin/nvidia-smi -L":                             true,
		`C:\> nvidia-smi.exe --query-gpu=index --format=csv`: true,
		"0, NVIDIA H200, gpu-nvidia-smi-01":                  false,
		"1, nvidia-smi":                                      false,
		"nvidia-smi, 0":                                      false,
		"nvidia-smi-01, 1":                                   false,
		"host-nvidia-smi":                                    false,
		"0, x, $ nvidia-smi -q":                              false,
	} {
		if got := isCommandEcho([]byte(line)); got != want {
			t.Errorf("isCommandEcho(%q) = %v, want %v", line, got, want)
		}
	}
}
