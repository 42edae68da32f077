package serverlog

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/flightdeck-dev/flightdeck/event"
)

// scanBlockSize is how much of the input one worker analyses at a time.
const scanBlockSize = 1 << 20

// Scan runs a Scanner over all of r and calls emit for each finding, in
// input order, then Flush; it returns the Scanner so that the caller can
// ask for the primary failure. Lines are numbered and cut as ScanLines
// does (1-based physical numbers, a leading "# source:" line skipped but
// counted, lines over MaxLineBytes cut).
//
// The parsers, which are pure, run on up to GOMAXPROCS goroutines over
// 1 MiB blocks of whole lines; the stateful part (failure incidents,
// benchmark tables, readiness rules) runs in order on the calling
// goroutine, which is also where emit is called. The findings are exactly
// those of feeding every line to Scanner.Feed. Every goroutine has ended
// when Scan returns. It returns the first read error other than io.EOF.
func Scan(r io.Reader, emit func(event.Payload)) (*Scanner, error) {
	return scanBlocks(r, emit, runtime.GOMAXPROCS(0), scanBlockSize, MaxLineBytes)
}

// block is a run of whole lines of the input, each ending in '\n', and what
// a worker found on them.
type block struct {
	data       []byte
	firstLine  int // line number of the first line
	lines      int
	skipSource bool // its first line is the input's "# source:" header
	items      []item
	done       chan struct{} // closed when items is ready
}

// item is a line with findings.
type item struct {
	idx        int // line index in the block
	start, end int // the line's bytes, without '\n'
	info       lineInfo
}

func scanBlocks(r io.Reader, emit func(event.Payload), workers, blockSize, maxLine int) (*Scanner, error) {
	workers = max(workers, 1)
	inflight := min(max(2*workers, 2), 16)
	src := blockSource{br: bufio.NewReaderSize(r, 64<<10), maxLine: maxLine}

	free := make(chan *block, inflight)
	for range inflight {
		free <- &block{}
	}
	work := make(chan *block, inflight)
	order := make(chan *block, inflight)
	quit := make(chan struct{})
	var readErr error
	var wg sync.WaitGroup
	defer func() {
		close(quit) // stops the reader if emit panicked
		wg.Wait()
	}()

	wg.Add(1)
	go func() { // reader: the only goroutine that touches r
		defer wg.Done()
		defer close(work)
		defer close(order)
		next := 1
		for {
			var b *block
			select {
			case b = <-free:
			case <-quit:
				return
			}
			if b.data == nil {
				// Room for the block and one buffered chunk past it; only a
				// line longer than the reader's buffer makes it grow.
				b.data = make([]byte, 0, blockSize+64<<10+1)
			}
			var err error
			b.data, err = src.fill(b.data[:0], blockSize)
			b.firstLine, b.lines = next, bytes.Count(b.data, []byte{'\n'})
			next += b.lines
			if len(b.data) > 0 {
				b.done = make(chan struct{})
				order <- b // both channels hold inflight blocks: never blocks
				work <- b
			}
			if err != nil {
				if !errors.Is(err, io.EOF) {
					readErr = fmt.Errorf("serverlog: read log: %w", err)
				}
				return
			}
		}
	}()

	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var an analyzer
			for b := range work {
				b.analyze(&an)
				close(b.done)
			}
		}()
	}

	s := &Scanner{}
	skipped := 0 // 1 when line 1 was a "# source:" header: it is not fed
	for b := range order {
		<-b.done
		if b.firstLine == 1 && b.skipSource {
			skipped = 1
		}
		s.applyBlock(b, skipped, emit)
		free <- b
	}
	wg.Wait()
	s.Flush(emit)
	return s, readErr
}

// analyze runs the stateless parsers over every line of b.
func (b *block) analyze(an *analyzer) {
	b.items = b.items[:0]
	b.skipSource = false
	sawPrefix := false
	for idx, pos := 0, 0; pos < len(b.data); idx++ {
		end := pos + bytes.IndexByte(b.data[pos:], '\n')
		line := trimCR(b.data[pos:end])
		lineNo := b.firstLine + idx
		if lineNo == 1 && bytes.HasPrefix(line, kwSourceHeader) {
			b.skipSource = true
		} else {
			info := an.analyze(line, lineNo)
			// Seeing the SGLang prefix only matters once: later sightings
			// in the block change nothing.
			if info.sglangPrefix {
				if sawPrefix {
					info.sglangPrefix = false
				}
				sawPrefix = true
			}
			if !info.empty() {
				b.items = append(b.items, item{idx: idx, start: pos, end: end, info: info})
			}
		}
		pos = end + 1
	}
}

// applyBlock runs the stateful part over b's lines with findings, and over
// every line while a benchmark table is open.
func (s *Scanner) applyBlock(b *block, skipped int, emit func(event.Payload)) {
	pos, idx := 0, 0 // the next line not yet applied
	var none lineInfo
	walk := func(to int) {
		for idx < to && s.bench.active() {
			end := pos + bytes.IndexByte(b.data[pos:], '\n')
			lineNo := b.firstLine + idx
			if !(lineNo == 1 && b.skipSource) {
				s.apply(&none, trimCR(b.data[pos:end]), lineNo-skipped, lineNo, emit)
			}
			pos, idx = end+1, idx+1
		}
	}
	for i := range b.items {
		it := &b.items[i]
		walk(it.idx)
		lineNo := b.firstLine + it.idx
		s.apply(&it.info, trimCR(b.data[it.start:it.end]), lineNo-skipped, lineNo, emit)
		pos, idx = it.end+1, it.idx+1
	}
	walk(b.lines)
}

// blockSource cuts its input into runs of whole lines, with the line rules
// of ScanLines: a last line without a newline is a line if it is not
// empty, and a line over maxLine bytes is cut to maxLine.
type blockSource struct {
	br      *bufio.Reader
	maxLine int
}

// fill appends whole lines, each ending in '\n', to dst until it holds at
// least target bytes or the input ends (io.EOF, with what was read).
func (s *blockSource) fill(dst []byte, target int) ([]byte, error) {
	for len(dst) < target {
		if s.br.Buffered() == 0 {
			if _, err := s.br.Peek(1); err != nil {
				return dst, err
			}
		}
		buffered, _ := s.br.Peek(s.br.Buffered())
		if i := bytes.LastIndexByte(buffered, '\n'); i >= 0 {
			// Whole lines, each shorter than the reader's buffer: copy them
			// in one go.
			dst = append(dst, buffered[:i+1]...)
			if _, err := s.br.Discard(i + 1); err != nil {
				return dst, err
			}
			continue
		}
		// One line that did not fit in what was buffered.
		line, ok, err := s.readLine()
		if ok {
			dst = append(append(dst, line...), '\n')
		}
		if err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// readLine reads one line like ScanLines (cut at maxLine, without '\n').
// ok is false when there was nothing left.
func (s *blockSource) readLine() (line []byte, ok bool, err error) {
	var long []byte
	for {
		chunk, err := s.br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if room := s.maxLine - len(long); room > 0 {
				long = append(long, chunk[:min(len(chunk), room)]...)
			}
			continue
		}
		if len(chunk) == 0 && long == nil {
			return nil, false, err
		}
		chunk = bytes.TrimSuffix(chunk, []byte{'\n'})
		if room := s.maxLine - len(long); room > 0 {
			long = append(long, chunk[:min(len(chunk), room)]...)
		}
		if long == nil {
			long = []byte{}
		}
		return long, true, err
	}
}
