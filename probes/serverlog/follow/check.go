package follow

import "github.com/flightdeck-dev/flightdeck/sessions/event"

// Exit statuses of readAt's command besides dd's own.
const (
	readNotRegular = 3   // not a regular file: not read (dd would consume a FIFO)
	readMissing    = 4   // no such file
	readNoCommand  = 127 // dd (or env) not found
)

// streamState is what the Follower knows about one tail's stream at a
// point: the splitter's and line reader's state and the file offset after
// the last complete line.
type streamState struct {
	rd     lineReader
	sp     splitter
	offset int64
}

// processed is what a batch of the stream yields, not yet delivered.
type processed struct {
	ops        []streamOp
	state      streamState // after the batch
	needsCheck bool        // deliver only after a content check
	at         int64       // offset where the batch continues the file
	anchor     []byte      // the delivered bytes before it
	head       []byte      // the file's bytes from at, as the batch (and the held partial line) has them
}

// streamOp is one thing to deliver, in stream order.
type streamOp struct {
	lines  []event.LogLine
	end    int64                // offset after lines
	reset  string               // Reset reason
	notice event.LogNoticeClass // with text
	text   string
	err    string
}

// headLen is how many of a batch's first bytes the content check compares.
const headLen = 128

// checkResult is the verdict of a content check.
type checkResult uint8

const (
	checkOK      checkResult = iota // the bytes before the batch are those delivered (or cannot be read: not a regular file, no dd)
	checkStale                      // the file was rewritten and the batch read from the new one at the old offset
	checkChanged                    // the file has other content now, read after the batch
	checkGone                       // the file is gone or unreadable now, after the batch was read
	checkFailed                     // the check did not run (connection lost)
)
