package remote

import (
	"bufio"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/sshdtest"
)

// StartInput's stdin reaches the command line by line while it runs, and
// closing it ends the command's input, locally and over a real sshd.
func TestStartInput(t *testing.T) {
	srv, known := knownServer(t, sshdtest.Options{})
	for name, h := range map[string]InputStarter{
		"local": NewLocal(),
		"ssh":   dialTest(t, srv.Target(), testOptions(t, srv, known)),
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			p, in, err := h.StartInput(ctx, `while read -r x; do echo "got $x"; done; echo eof`)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			out := bufio.NewScanner(p.Stdout())
			for i := range 3 {
				if _, err := fmt.Fprintf(in, "line %d\n", i); err != nil {
					t.Fatal(err)
				}
				if !out.Scan() || out.Text() != fmt.Sprintf("got line %d", i) {
					t.Fatalf("after line %d: %q %v", i, out.Text(), out.Err())
				}
			}
			if err := in.Close(); err != nil {
				t.Fatal(err)
			}
			if !out.Scan() || out.Text() != "eof" {
				t.Fatalf("after Close: %q %v", out.Text(), out.Err())
			}
			if err := waitErr(t, p); err != nil {
				t.Fatal(err)
			}
		})
	}
}
