//go:build linux || darwin || freebsd

package serverlog

import (
	"io"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// minMapBytes: a smaller input is read with read(2); mapping it would
// not pay for the mapping.
const minMapBytes = 1 << 20

// mapFile maps f for reading from its offset to its end when it is a
// regular file of at least minMapBytes there; nil when it is not (a pipe,
// a terminal, a small file) or cannot be mapped: the caller then reads it.
func mapFile(f *os.File) *mappedFile {
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	off, err := f.Seek(0, io.SeekCurrent)
	size := fi.Size()
	if err != nil || size-off < minMapBytes || size != int64(int(size)) {
		return nil
	}
	page := int64(os.Getpagesize())
	start := off &^ (page - 1)
	whole, err := unix.Mmap(int(f.Fd()), start, int(size-start), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil
	}
	// One pass from start to end: read ahead of the workers.
	_ = unix.Madvise(whole, unix.MADV_SEQUENTIAL)
	return &mappedFile{f: f, whole: whole, data: whole[off-start:], end: size}
}

// release lets go of the mapped pages that lie wholly before the end of
// done, a block of the mapping that is finished with (or nothing when it
// is not in the mapping): they leave the process's resident set (they
// stay in the page cache), so that a large log does not count in it
// whole; the mapping is unmapped at the end all the same. Touching them
// again would read them in again.
func (mf *mappedFile) release(done []byte) {
	if len(mf.whole) == 0 || !mf.inMapping(addrOf(done)) {
		return
	}
	start := addrOf(mf.whole)
	end := int(addrOf(done)-start) + len(done)
	end &^= os.Getpagesize() - 1
	if end-mf.released >= releaseBytes {
		_ = unix.Madvise(mf.whole[mf.released:end], unix.MADV_DONTNEED)
		mf.released = end
	}
}

// releaseBytes: release works in steps of at least this much.
const releaseBytes = 4 << 20

// unmap releases the mapping; nothing may touch it afterwards.
func (mf *mappedFile) unmap() {
	if mf.whole != nil {
		_ = unix.Munmap(mf.whole)
		mf.whole, mf.data = nil, nil
	}
}

func addrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
