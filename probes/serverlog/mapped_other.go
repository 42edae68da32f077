//go:build !(linux || darwin || freebsd)

package serverlog

import "os"

// mapFile maps nothing on this system: the input is read with read.
func mapFile(*os.File) *mappedFile { return nil }

func (mf *mappedFile) unmap() {}

func (mf *mappedFile) release([]byte) {}

func addrOf([]byte) uintptr { return 0 }
