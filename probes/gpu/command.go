package gpu

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// shellCommand returns the POSIX shell command line running name with args,
// every word quoted with mvdan.cc/sh/v3/syntax.Quote (LangPOSIX).
//
// It stands in for remote.Command, which was not yet committed when this
// was written; the two produce the same line, and this can become a call to
// remote.Command.
func shellCommand(name string, args ...string) (string, error) {
	var b strings.Builder
	for i, w := range append([]string{name}, args...) {
		q, err := syntax.Quote(w, syntax.LangPOSIX)
		if err != nil {
			return "", fmt.Errorf("gpu: cannot quote command word %d: %w", i, err)
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(q)
	}
	return b.String(), nil
}
