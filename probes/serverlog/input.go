package serverlog

import (
	"errors"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
)

// ErrBinaryInput is wrapped by the error WriteJSONL returns for input that
// is not a text log: a compressed log, an executable, UTF-16 text. Test for
// it with errors.Is; the message after it says what was found.
var ErrBinaryInput = errors.New("binary input (compressed?)")

// sniffLen is how much of the input WriteJSONL looks at before it parses a
// line, to tell a text log from binary data.
const sniffLen = sanitize.SniffLen
