package sim

import (
	"bytes"
	"strings"
	"testing"
)

func TestRunVersion(t *testing.T) {
	for _, tc := range []struct {
		args         []string
		code         int
		stdout, errs string
	}{
		{[]string{"driver"}, 0, "590.48.01\n", ""},
		{[]string{"torch"}, 0, "2.8.0+cu128\n", ""},
		{[]string{"flashinfer"}, 1, "", `no simulated version of "flashinfer" (known: cuda, driver, nccl, python, sglang, torch, vllm)`},
		{nil, 2, "", "usage: flightdeck sim version NAME"},
		{[]string{"a", "b"}, 2, "", "usage"},
	} {
		var out, errb bytes.Buffer
		code := RunVersion(tc.args, &out, &errb)
		if code != tc.code || out.String() != tc.stdout || !strings.Contains(errb.String(), tc.errs) {
			t.Errorf("%q: %d %q %q", tc.args, code, out.String(), errb.String())
		}
	}
}
