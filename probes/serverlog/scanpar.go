package serverlog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
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
	return scanBlocks(r, emit, nil, runtime.GOMAXPROCS(0), scanBlockSize, MaxLineBytes)
}

// preEncoder lets the workers encode the parsers' findings (WriteJSONL's
// JSON), so that the ordered merge only passes bytes on: encode appends
// the encoding of a finding, and item is called in order, in place of
// emit, with each such finding and its encoding (valid during the call).
// Findings of the stateful part (failures, benchmark results, uvicorn
// readiness) still go to emit.
//
// With fast set, the workers also write the records of SGLang's 2025
// decode and prefill lines straight from their text (jsonFast), and
// point and prefill are called for them in place of item: point with the
// decode line's Aggregator inputs. blockDone is called after a block's
// last record and before its buffers are reused: the encodings passed
// for it are valid until then.
type preEncoder struct {
	encode    func(dst []byte, p event.Payload) []byte
	item      func(found event.Payload, encoded []byte)
	fast      bool
	point     func(p *tputPoint, encoded []byte)
	prefill   func(encoded []byte)
	blockDone func()
}

// block is a run of whole lines of the input, each ending in '\n', and what
// a worker found on them.
type block struct {
	data       []byte // the lines: buf, or a mapped file's pages
	buf        []byte // the block's own storage
	firstLine  int    // line number of the first line, as analysed (see numbering)
	lines      int
	seq        int  // the block's place in the input: 0, 1, …
	off        int  // the offset of its first byte in the input
	trueFirst  int  // its first line number, once numbered
	numbered   bool // trueFirst is known (both guarded by the numbering's lock)
	skipSource bool // its first line is the input's "# source:" header
	items      []item
	points     []tputPoint   // the fast path's decode lines, in order
	prefixed   []lineAt      // lines whose only finding is SGLang's prefix
	enc        []byte        // the items' encoded findings, with a preEncoder
	done       chan struct{} // closed when items is ready
	err        error         // what ended the analysis: a fault in a mapped file
}

// lineAt is a line of a block: its index and the offset of its first byte.
type lineAt struct{ idx, start int32 }

// item is a line with findings.
type item struct {
	info        lineInfo
	idx         int32 // line index in the block
	start, end  int32 // the line's bytes, without '\n' (a block is a few MiB at most)
	enc, encEnd int32 // the finding's encoding in the block's enc, with a preEncoder
	fast        uint8 // written by jsonFast (info is then empty): fastDecode or fastPrefill
	pt          int32 // fastDecode: its index in the block's points
}

func scanBlocks(r io.Reader, emit func(event.Payload), pre *preEncoder, workers, blockSize, maxLine int) (*Scanner, error) {
	return scanSource(&blockSource{r: r, maxLine: max(maxLine, 1)}, faultGuard{}, emit, pre, workers, blockSize)
}

// scanSource is scanBlocks over src; guard protects every goroutine that
// touches the blocks' data (a mapped file's pages) and the error of a
// fault ends the scan.
func scanSource(src lineSource, guard faultGuard, emit func(event.Payload), pre *preEncoder, workers, blockSize int) (*Scanner, error) {
	workers = max(workers, 1)
	inflight := min(max(2*workers, 2), 16)

	free := make(chan *block, inflight)
	for range inflight {
		free <- &block{}
	}
	work := make(chan *block, inflight)
	order := make(chan *block, inflight)
	quit := make(chan struct{})
	num := newNumbering(inflight)
	var readErr error
	var wg sync.WaitGroup
	defer func() {
		close(quit) // stops the reader if emit panicked or a block faulted
		wg.Wait()
	}()

	wg.Add(1)
	go func() { // reader: the only goroutine that touches src
		defer wg.Done()
		defer close(work)
		defer close(order)
		seq, off := 0, 0
		for {
			var b *block
			select {
			case b = <-free:
			case <-quit:
				return
			}
			var err error
			if ferr := guard.run(func() { err = src.next(b, blockSize) }); ferr != nil {
				readErr = ferr
				return
			}
			b.seq, b.off, b.numbered = seq, off, false // (no worker holds b)
			seq, off = seq+1, off+len(b.data)
			if len(b.data) > 0 {
				b.done = make(chan struct{})
				b.err = nil
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
				b.firstLine = num.guess(b)
				b.err = guard.run(func() {
					b.analyze(&an, pre)
					if first, ok := num.counted(b); ok {
						b.fixLines(&an, pre, first)
					}
				})
				close(b.done)
			}
		}()
	}

	s := &Scanner{}
	var fixAn analyzer // fixLines' on this goroutine
	skipped := 0       // 1 when line 1 was a "# source:" header: it is not fed
	for b := range order {
		<-b.done
		err := b.err
		if err == nil {
			ferr := guard.run(func() {
				// Every block before b has been applied, so counted: b's
				// first line is known, and its worker may have fixed
				// its numbers already (then this does nothing).
				first, ok := num.first(b)
				if !ok { // cannot happen: the blocks are applied in order
					err = errors.New("serverlog: a block's line numbers are not known")
					return
				}
				b.fixLines(&fixAn, pre, first)
				if b.seq == 0 && b.skipSource {
					skipped = 1
				}
				s.applyBlock(b, skipped, emit, pre)
			})
			if err == nil {
				err = ferr
			}
		}
		if err != nil {
			return s, err // the deferred function waits for the others
		}
		if pre != nil && pre.blockDone != nil {
			pre.blockDone()
		}
		free <- b
	}
	wg.Wait()
	s.Flush(emit)
	return s, readErr
}

// analyze runs the stateless parsers over every line of b, and pre's
// encoder over their findings; it sets b.lines.
func (b *block) analyze(an *analyzer, pre *preEncoder) {
	b.items = b.items[:0]
	b.enc = b.enc[:0]
	b.prefixed = b.prefixed[:0]
	b.points = b.points[:0]
	b.skipSource = false
	fast := pre != nil && pre.fast
	if fast && cap(b.enc) == 0 {
		// A block's records are about as long as its lines (an SGLang
		// log's are a little longer): sized once, the buffers do not
		// grow by doubling, copying and collecting as the first blocks
		// fill (parse log: 9 collections in its first 40 ms, 3 with
		// this; wall -2.5 % on 2 cores and on one).
		b.enc = make([]byte, 0, len(b.data)+len(b.data)/4)
		b.items = make([]item, 0, len(b.data)/128)
		b.points = make([]tputPoint, 0, len(b.data)/128)
	}
	idx, pos := 0, 0
	for ; pos < len(b.data); idx++ {
		end := pos + bytes.IndexByte(b.data[pos:], '\n')
		line := trimCR(b.data[pos:end])
		lineNo := b.firstLine + idx
		if idx == 0 && b.seq == 0 && bytes.HasPrefix(line, kwSourceHeader) {
			b.skipSource = true
		} else if fast && b.analyzeFast(an, line, lineNo, idx, pos, end) {
			// written by jsonFast
		} else {
			info := an.analyze(line, lineNo)
			if info == (lineInfo{flags: infoSGLangPrefix}) {
				// Only the prefix: applyBlock looks at these lines until
				// the scanner has seen an SGLang line, which is at once
				// in an SGLang log.
				b.prefixed = append(b.prefixed, lineAt{int32(idx), int32(pos)})
			} else if !info.empty() {
				it := item{idx: int32(idx), start: int32(pos), end: int32(end), info: info}
				if pre != nil && info.found != nil && info.flags&infoReady == 0 {
					it.enc = int32(len(b.enc))
					b.enc = pre.encode(b.enc, info.found)
					it.encEnd = int32(len(b.enc))
				}
				b.items = append(b.items, it)
			}
		}
		pos = end + 1
	}
	b.lines = idx
}

// analyzeFast writes the record of line with jsonFast and adds its item;
// false when the line goes the general way.
func (b *block) analyzeFast(an *analyzer, line []byte, lineNo, idx, pos, end int) bool {
	own := ownPrefixEnd(line)
	if own == 0 {
		return false
	}
	at := len(b.enc)
	var p tputPoint
	enc, kind := jsonFast(b.enc, an, line, own, lineNo, &p)
	if kind == fastNone {
		return false
	}
	b.enc = enc
	it := item{idx: int32(idx), start: int32(pos), end: int32(end), enc: int32(at), encEnd: int32(len(enc)), fast: kind}
	if kind == fastDecode {
		it.pt = int32(len(b.points))
		b.points = append(b.points, p)
	}
	b.items = append(b.items, it)
	return true
}

// applyBlock runs the stateful part over b's lines with findings, and over
// every line while a benchmark table is open.
func (s *Scanner) applyBlock(b *block, skipped int, emit func(event.Payload), pre *preEncoder) {
	pos, idx := 0, 0 // the next line not yet applied
	pi := 0          // the next of b.prefixed
	prefixOnly := lineInfo{flags: infoSGLangPrefix}
	var none lineInfo
	// upTo applies the lines before line index to that are not items: all
	// of them while a benchmark table is open (each is a row or ends it),
	// otherwise only those with SGLang's prefix, until one is seen.
	upTo := func(to int) {
		for idx < to {
			for pi < len(b.prefixed) && int(b.prefixed[pi].idx) < idx {
				pi++
			}
			info := &none
			if !s.bench.active() {
				if s.sawSGLang || pi == len(b.prefixed) || int(b.prefixed[pi].idx) >= to {
					return
				}
				idx, pos = int(b.prefixed[pi].idx), int(b.prefixed[pi].start)
			}
			if pi < len(b.prefixed) && int(b.prefixed[pi].idx) == idx {
				info = &prefixOnly
			}
			end := pos + bytes.IndexByte(b.data[pos:], '\n')
			lineNo := b.firstLine + idx
			if !(lineNo == 1 && b.skipSource) {
				s.apply(info, trimCR(b.data[pos:end]), lineNo-skipped, lineNo, emit)
			}
			pos, idx = end+1, idx+1
		}
	}
	for i := range b.items {
		it := &b.items[i]
		upTo(int(it.idx))
		lineNo := b.firstLine + int(it.idx)
		if it.fast != fastNone {
			switch {
			case s.bench.active():
				// Every line is a row of the open table or ends it: the
				// general way, as the line was read in the first place.
				// (Only here is the line read: its bytes were last seen
				// by another core.)
				line := trimCR(b.data[it.start:it.end])
				info := s.an.analyze(line, lineNo)
				s.apply(&info, line, lineNo-skipped, lineNo, emit)
			case it.fast == fastDecode:
				s.n = lineNo - skipped
				s.sawSGLang = true
				pre.point(&b.points[it.pt], b.enc[it.enc:it.encEnd])
			default:
				s.n = lineNo - skipped
				s.sawSGLang = true
				pre.prefill(b.enc[it.enc:it.encEnd])
			}
		} else if it.info.found != nil && it.info.flags&infoReady == 0 && !s.bench.active() {
			// What apply does with a parser's finding outside a table,
			// without touching the line: its bytes were last seen by
			// another core, and reading them costs a cache miss.
			s.n = lineNo - skipped
			s.saw(it.info.server)
			if pre != nil {
				pre.item(it.info.found, b.enc[it.enc:it.encEnd])
			} else {
				emit(it.info.found)
			}
		} else {
			s.apply(&it.info, trimCR(b.data[it.start:it.end]), lineNo-skipped, lineNo, emit)
		}
		pos, idx = int(it.end)+1, int(it.idx)+1
	}
	upTo(b.lines)
}

// blockSource cuts its input into runs of whole lines, with the line rules
// of ScanLines: a last line without a newline is a line if it is not
// empty, and a line over maxLine bytes is cut to maxLine. It reads
// straight into the block's buffer (no intermediate copy); the start of
// the line that a read ends in waits in carry for the next block.
type blockSource struct {
	r       io.Reader
	maxLine int
	carry   []byte // the start of the next line, at most maxLine bytes
	skip    bool   // drop the input up to and including the next '\n': the rest of a cut line
	empty   int    // reads in a row that returned nothing
	err     error  // what ended the input (io.EOF at the end); the blocks already cut come first
}

// minRead is the least room a read is given.
const minRead = 64 << 10

// fill appends whole lines, each ending in '\n', to dst until it holds at
// least target bytes or the input ends (then the error that ended it,
// io.EOF at the end, with what was read).
func (s *blockSource) fill(dst []byte, target int) ([]byte, error) {
	for len(dst) < target {
		if s.err != nil {
			if len(s.carry) > 0 { // a last line without a newline
				dst = append(append(dst, s.carry...), '\n')
				s.carry = s.carry[:0]
			}
			return dst, s.err
		}
		lineStart := len(dst) // the line in progress: carry, then what is read
		dst = append(dst, s.carry...)
		s.carry = s.carry[:0]
		dst = slices.Grow(dst, minRead)
		readAt := len(dst)
		// A read of at most maxLine bytes cannot hold a whole line that is
		// too long: only the line in progress needs a length check.
		n, err := s.r.Read(dst[readAt : readAt+min(cap(dst)-readAt, s.maxLine)])
		dst = dst[:readAt+n]
		if err != nil {
			s.err = err
		} else if n == 0 {
			if s.empty++; s.empty >= 100 {
				s.err = io.ErrNoProgress
			}
		} else {
			s.empty = 0
		}
		if s.skip {
			i := bytes.IndexByte(dst[readAt:], '\n')
			if i < 0 {
				dst = dst[:readAt]
				continue
			}
			dst = append(dst[:readAt], dst[readAt+i+1:]...)
			s.skip = false
		}
		if i := bytes.IndexByte(dst[readAt:], '\n'); i >= 0 {
			if end := readAt + i; end-lineStart > s.maxLine {
				dst = append(dst[:lineStart+s.maxLine], dst[end:]...)
			}
		}
		last := lineStart + bytes.LastIndexByte(dst[lineStart:], '\n') + 1
		s.carry = append(s.carry, dst[last:]...)
		dst = dst[:last]
		if len(s.carry) > s.maxLine {
			dst = append(append(dst, s.carry[:s.maxLine]...), '\n')
			s.carry = s.carry[:0]
			s.skip = true
		}
	}
	return dst, nil
}
