package server

import (
	"slices"
	"strings"
	"testing"
)

func TestRedactArgv(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{[]string{"python3", "-m", "sglang.launch_server", "--api-key", "sk-1", "--port", "30000"},
			[]string{"python3", "-m", "sglang.launch_server", "--api-key", "<redacted>", "--port", "30000"}},
		{[]string{"vllm", "serve", "m", "--hf-token=hf_x", "--tokenizer-path", "/t", "--ssl-keyfile", "/k.pem"},
			[]string{"vllm", "serve", "m", "--hf-token=<redacted>", "--tokenizer-path", "/t", "--ssl-keyfile", "/k.pem"}},
		{[]string{"x", "--admin_password", "p", "--client-secret", "s", "--aws-credentials", "c", "--auth", "a", "--token"},
			[]string{"x", "--admin_password", "<redacted>", "--client-secret", "<redacted>", "--aws-credentials", "<redacted>", "--auth", "<redacted>", "--token"}},
		// A flag without a value: the next flag stays.
		{[]string{"x", "--enable-token-usage", "--port", "1"}, []string{"x", "--enable-token-usage", "--port", "1"}},
		{[]string{"env", "HF_TOKEN=hf_x", "WANDB_API_KEY=k", "NCCL_PROTO=LL", "python3"},
			[]string{"env", "HF_TOKEN=<redacted>", "WANDB_API_KEY=<redacted>", "NCCL_PROTO=LL", "python3"}},
		// URL userinfo in any word (--extra "--proxy http://alice:pw@host/").
		{[]string{"x", "--proxy", "http://alice:UrlPassw0rd@host/", "--model-url=https://user:URLPW77@m/", "MY_PASS=plainpass777", "--db-pass", "p2", "--session-cookie", "c"},
			[]string{"x", "--proxy", "http://<redacted>@host/", "--model-url=https://<redacted>@m/", "MY_PASS=<redacted>", "--db-pass", "<redacted>", "--session-cookie", "<redacted>"}},
		{nil, nil},
	} {
		in := slices.Clone(tc.in)
		if got := RedactArgv(in); !slices.Equal(got, tc.want) {
			t.Errorf("RedactArgv(%q)\n = %q\nwant %q", tc.in, got, tc.want)
		}
		if !slices.Equal(in, tc.in) {
			t.Errorf("input changed: %q", in)
		}
	}
}

// FuzzRedactArgv: whatever the words, the value after a secret flag never
// survives, and nothing else changes length or order.
func FuzzRedactArgv(f *testing.F) {
	f.Add("python3 --api-key sk --port 1")
	f.Add("--hf-token=x env HF_TOKEN=y --token")
	f.Add("-- = --=x KEY= =v")
	f.Fuzz(func(t *testing.T, s string) {
		argv := strings.Fields(s)
		out := RedactArgv(argv)
		if len(out) != len(argv) {
			t.Fatalf("%d words became %d", len(argv), len(out))
		}
		for i, w := range argv {
			if strings.HasPrefix(w, "-") && !strings.Contains(w, "=") && secretFlag(strings.TrimLeft(w, "-")) &&
				i+1 < len(argv) && !strings.HasPrefix(argv[i+1], "-") && out[i+1] != "<redacted>" {
				t.Fatalf("%q kept the value of %s: %q", s, w, out[i+1])
			}
		}
	})
}
