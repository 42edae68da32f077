package serverlog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
)

// Reading a regular file through a memory mapping: the blocks are slices
// of the mapping, so the input is not copied (read(2) copies every byte
// once more, about a tenth of `parse log`'s time on a large log). A file
// can shrink while it is mapped; touching a page past its new end then
// raises SIGBUS, which the goroutines that touch the mapping turn into a
// panic (debug.SetPanicOnFault) and then into ErrInputShrank.

// ErrInputShrank is wrapped by the error WriteJSONL returns when the file
// it read through a memory mapping was truncated while it was being read:
// the findings before the error were written, those after it are
// unknown.
var ErrInputShrank = errors.New("the log file shrank while it was read (truncated?)")

// lineSource gives scanBlocks the input in runs of whole lines, each
// ending in '\n'.
type lineSource interface {
	// next sets b.data to the next run of lines, about target bytes
	// (the last run may be shorter, a long line longer); the error says
	// what ended the input (io.EOF at the end), with b.data the last
	// lines read.
	next(b *block, target int) error
}

// next reads the block through fill, into b's own buffer.
func (s *blockSource) next(b *block, target int) error {
	if b.buf == nil {
		// Room for the block and one read past it; only a line longer
		// than that makes it grow.
		b.buf = make([]byte, 0, target+minRead)
	}
	var err error
	b.buf, err = s.fill(b.buf[:0], target)
	b.data = b.buf
	return err
}

// mappedSource cuts a memory-mapped input into blocks without copying it,
// with blockSource's line rules: a line over maxLine bytes is cut to
// maxLine (that block is a copy), and the input after the mapping (the
// mapping's unterminated last line, and whatever was appended to the file
// since it was mapped) is read with rest, as blockSource reads.
type mappedSource struct {
	m       []byte      // the mapped input not yet cut into blocks
	mf      *mappedFile // the mapping, whose pages are let go behind the scan; nil in tests
	maxLine int
	rest    blockSource // reads the file from the end of the mapping on
	inRest  bool        // the mapping is done: rest gives the blocks
}

func (s *mappedSource) next(b *block, target int) error {
	// b comes back when its lines are done with, in order: the pages
	// before its end are not needed again.
	if s.mf != nil && len(b.data) > 0 {
		s.mf.release(b.data)
	}
	if s.inRest {
		return s.rest.next(b, target)
	}
	m := s.m
	// The block is m[:end]: whole lines, each proved at most maxLine
	// long by a '\n' within maxLine+1 bytes of where the window starts.
	end := 0
	for end < target && end < len(m) {
		lim := min(end+s.maxLine+1, len(m))
		i := bytes.LastIndexByte(m[end:min(lim, target)], '\n')
		if i < 0 {
			if end > 0 || lim <= target {
				break
			}
			// The first line ends after target: it is the block when it
			// ends within the window.
			j := bytes.IndexByte(m[target:lim], '\n')
			if j < 0 {
				break
			}
			i = target + j
		}
		end += i + 1
	}
	switch {
	case end > 0:
		b.data, s.m = m[:end], m[end:]
		return nil
	case len(m) > s.maxLine:
		// A line over maxLine bytes: its first maxLine, as fill cuts it,
		// and the rest of it skipped.
		b.buf = append(append(b.buf[:0], m[:s.maxLine]...), '\n')
		b.data = b.buf
		if i := bytes.IndexByte(m[s.maxLine:], '\n'); i >= 0 {
			s.m = m[s.maxLine+i+1:]
		} else {
			s.m, s.inRest, s.rest.skip = nil, true, true
		}
		return nil
	}
	// The mapping ends in a line without '\n' (or is used up): rest
	// carries on from there.
	s.rest.carry = append(s.rest.carry[:0], m...)
	s.m, s.inRest = nil, true
	return s.rest.next(b, target)
}

// mappedFile is a regular file mapped for reading, from its offset at the
// time to its size then.
type mappedFile struct {
	f        *os.File
	whole    []byte // the mapping, from a page boundary
	data     []byte // the input: whole from the file's offset
	end      int64  // the file offset where the mapping ends
	released int    // whole[:released] was let go (release)
}

// source returns the mappedSource of the file; rest goes on reading the
// file from the end of the mapping.
func (mf *mappedFile) source(maxLine int) (*mappedSource, error) {
	if _, err := mf.f.Seek(mf.end, io.SeekStart); err != nil {
		return nil, err
	}
	return &mappedSource{m: mf.data, mf: mf, maxLine: max(maxLine, 1), rest: blockSource{r: mf.f, maxLine: max(maxLine, 1)}}, nil
}

// inMapping reports whether addr, a fault's address, lies in the mapping.
func (mf *mappedFile) inMapping(addr uintptr) bool {
	if len(mf.whole) == 0 {
		return false
	}
	start := uintptr(addrOf(mf.whole))
	return addr >= start && addr-start < uintptr(len(mf.whole))
}

// shrank reports whether the file is now shorter than its mapping: pages
// past the new end read as zeros or fault.
func (mf *mappedFile) shrank() bool {
	fi, err := mf.f.Stat()
	return err == nil && fi.Size() < mf.end
}

// faultGuard turns a fault on a mapped file's pages into ErrInputShrank
// for the goroutine that calls its run: any other panic goes on.
type faultGuard struct{ mf *mappedFile }

// run calls fn and returns the error of a fault in the mapping during it;
// without a mapping it only calls fn.
func (g faultGuard) run(fn func()) (err error) {
	if g.mf == nil {
		fn()
		return nil
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if f, ok := r.(interface{ Addr() uintptr }); ok && g.mf.inMapping(f.Addr()) {
				err = fmt.Errorf("serverlog: read log: %w", ErrInputShrank)
				return
			}
			panic(r)
		}
	}()
	fn()
	return nil
}
