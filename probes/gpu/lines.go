package gpu

import (
	"bufio"
	"errors"
	"io"
)

// maxLineLen bounds one line of nvidia-smi output. A 212-column "all
// fields" row is about 2.5 KiB; anything past this is cut (and flagged).
const maxLineLen = 64 << 10

// lineReader reads lines without their "\n" or "\r\n". A line longer than
// maxLineLen is returned cut, with long set; the rest of it is discarded.
// A last line without "\n" is returned before io.EOF.
type lineReader struct {
	r   *bufio.Reader
	buf []byte
	err error // an error held back while a final partial line is returned
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, maxLineLen)}
}

// next returns the next line, valid until the following call.
func (lr *lineReader) next() (line []byte, long bool, err error) {
	if lr.err != nil {
		return nil, false, lr.err
	}
	b, err := lr.r.ReadSlice('\n')
	switch {
	case err == nil:
		return trimEOL(b), false, nil
	case errors.Is(err, bufio.ErrBufferFull):
		lr.buf = append(lr.buf[:0], b...)
		for errors.Is(err, bufio.ErrBufferFull) {
			_, err = lr.r.ReadSlice('\n')
		}
		if err != nil {
			lr.err = err
		}
		return lr.buf, true, nil
	case len(b) > 0:
		lr.buf = append(lr.buf[:0], b...)
		lr.err = err
		return trimEOL(lr.buf), false, nil
	}
	return nil, false, err
}

func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b
}
