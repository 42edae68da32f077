package driver

import "strconv"

// cksumTable is the CRC-32 table of POSIX cksum(1): polynomial 0x04C11DB7,
// most significant bit first.
var cksumTable = func() (t [256]uint32) {
	for i := range t {
		c := uint32(i) << 24
		for range 8 {
			if c&0x80000000 != 0 {
				c = c<<1 ^ 0x04C11DB7
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// cksum returns what POSIX `cksum < file` prints for content b, without
// the newline: "CRC SIZE" (decimal), the checksum lockScript's versions
// use, so a version computed in-process by the agent (agent lock) names
// the same file state as one computed by the script.
func cksum(b []byte) string {
	var s cksummer
	s.Write(b)
	return s.String()
}

// cksummer computes cksum over what is written to it, in pieces.
type cksummer struct {
	c uint32
	n uint64
}

// Write adds b; it never fails.
func (s *cksummer) Write(b []byte) (int, error) {
	c := s.c
	for _, x := range b {
		c = c<<8 ^ cksumTable[byte(c>>24)^x]
	}
	s.c, s.n = c, s.n+uint64(len(b))
	return len(b), nil
}

// String is "CRC SIZE" of what was written, as cksum prints it.
func (s *cksummer) String() string {
	c := s.c
	for n := s.n; n != 0; n >>= 8 {
		c = c<<8 ^ cksumTable[byte(c>>24)^byte(n)]
	}
	return strconv.FormatUint(uint64(^c), 10) + " " + strconv.FormatUint(s.n, 10)
}
