package serverlog

import "sync"

// Line numbers without a counting pass.
//
// A worker needs a block's first line number to write its records, and
// that number is the count of the lines of every block before it. The
// reader used to count them (bytes.Count) before handing a block out:
// with two workers that pass was about a tenth of parse log's CPU (the
// first touch of every page of the input). Now nobody counts ahead: a
// worker numbers its block from a guess, learns the block's line count
// as it parses, and tells the numbering; once every block before it is
// known, the block's true first line is known and its numbers are fixed
// up in place (fixLines), by the worker if it is known by then, or else
// by the ordered stage before it applies the block. A guess of the right
// width needs only the digits rewritten; otherwise the block is analysed
// again with the true number. With one worker the guess is always exact.

// numbering hands out the first line numbers of the blocks, in order of
// their seq, as their line counts come in.
type numbering struct {
	mu      sync.Mutex
	pending []*block // counted, waiting for the blocks before; by seq modulo its length
	next    int      // seq of the first block whose first line is unknown
	line    int      // its first line
	off     int      // its offset in the input
}

// newNumbering returns the numbering for at most inflight blocks in
// flight at a time (their seqs are then distinct modulo inflight).
func newNumbering(inflight int) *numbering {
	return &numbering{pending: make([]*block, inflight), line: 1}
}

// guess returns a first line for b, at offset b.off: exact when every
// block before b is counted, otherwise an estimate from the density of
// the lines counted so far (only its number of digits matters).
func (n *numbering) guess(b *block) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	gap := b.off - n.off // the bytes of the blocks not yet counted
	if b.seq == n.next || n.off == 0 {
		// Exact (gap is 0), or nothing to go by: a block is 1 MiB,
		// about 5,000 lines of a server log.
		return n.line + gap/200
	}
	// In float64: bytes times lines can overflow an int64. The lines in
	// the gap are at least none and at most one a byte, which keeps the
	// guess positive whatever the density.
	g := float64(gap) * float64(n.line-1) / float64(n.off)
	return n.line + int(min(max(g, 0), float64(gap)))
}

// counted records b.lines and returns b's first line when it is known.
func (n *numbering) counted(b *block) (first int, ok bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	k := len(n.pending)
	n.pending[b.seq%k] = b
	for p := n.pending[n.next%k]; p != nil && p.seq == n.next; p = n.pending[n.next%k] {
		n.pending[n.next%k] = nil
		p.trueFirst, p.numbered = n.line, true
		n.line += p.lines
		n.off += len(p.data)
		n.next++
	}
	return b.trueFirst, b.numbered
}

// first returns b's first line, known once every block before b has
// been counted.
func (n *numbering) first(b *block) (int, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return b.trueFirst, b.numbered
}

// fixLines makes first b's first line number, b having been analysed
// from b.firstLine: it rewrites the line numbers of the one-pass records
// and points in place when every number keeps its number of digits, and
// analyses again the lines of the other findings (their encodings are
// appended to b.enc); otherwise it analyses the whole block again.
func (b *block) fixLines(an *analyzer, pre *preEncoder, first int) {
	d := first - b.firstLine
	if d == 0 {
		return
	}
	last := max(b.lines-1, 0)
	w := digits(first)
	if digits(b.firstLine) != w || digits(b.firstLine+last) != w || digits(first+last) != w {
		b.firstLine = first
		b.analyze(an, pre)
		return
	}
	b.firstLine = first
	var e recordEnd
	for i := range b.items {
		it := &b.items[i]
		lineNo := first + int(it.idx)
		switch {
		case it.fast != fastNone:
			// The record ends in the number's digits and "}\n", as
			// many bytes as e's.
			e.set(lineNo)
			copy(b.enc[int(it.encEnd)-e.len:it.encEnd], e.text())
			if it.fast == fastDecode {
				b.points[it.pt].line = lineNo
			}
		case it.info.found != nil:
			// Its finding holds the line number (Line): rare lines
			// (not SGLang's 2025 decode and prefill lines).
			it.info = an.analyze(trimCR(b.data[it.start:it.end]), lineNo)
			if pre != nil && it.info.found != nil && it.info.flags&infoReady == 0 {
				it.enc = int32(len(b.enc))
				b.enc = pre.encode(b.enc, it.info.found)
				it.encEnd = int32(len(b.enc))
			}
		}
	}
}

// digits returns the number of decimal digits of n > 0.
func digits(n int) int {
	k := 1
	for ; n >= 10; n /= 10 {
		k++
	}
	return k
}
