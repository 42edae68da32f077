// Command genlog writes a synthetic SGLang server log (package synthlog)
// of a given size, for timing `flightdeck parse log` against grep:
//
//	go run ./probes/serverlog/synthlog/genlog -size 540MB -o /tmp/sglang.log
//
// The file is written with mode 0600; the line counts go to standard
// error.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/flightdeck-dev/flightdeck/probes/serverlog/synthlog"
)

func main() {
	size := flag.String("size", "540MB", "how much log to write (540MB, 1GiB, ...)")
	out := flag.String("o", "", "file to write (required)")
	flag.Parse()
	if err := run(*size, *out); err != nil {
		fmt.Fprintln(os.Stderr, "genlog:", err)
		os.Exit(1)
	}
}

func run(size, out string) error {
	if out == "" || flag.NArg() > 0 {
		return fmt.Errorf("usage: genlog -size 540MB -o FILE")
	}
	n, err := synthlog.ParseSize(size)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	st, err := synthlog.Write(f, n)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	fmt.Fprintf(os.Stderr, "%s: %d bytes, %d lines (%d decode, %d prefill)\n", out, st.Bytes, st.Lines, st.Decode, st.Prefill)
	return nil
}
