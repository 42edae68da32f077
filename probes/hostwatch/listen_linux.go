package hostwatch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// listenDiag lists the inodes of the TCP sockets listening on port through
// NETLINK_SOCK_DIAG (the kernel walks only its listening hash, and only
// the port's sockets are returned), sorted. Reading /proc/net/tcp instead
// walks every bucket of the established hash as well: about 10 ms of
// kernel time on a 2-core VM, more on a host with a large table, every
// interval.
func listenDiag(port int) (string, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return "", fmt.Errorf("sock_diag: %w", err)
	}
	defer unix.Close(fd)
	var inodes []string
	buf := make([]byte, 32<<10)
	for seq, family := range []uint8{unix.AF_INET, unix.AF_INET6} {
		if err := unix.Sendto(fd, diagRequest(family, port, uint32(seq+1)), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
			return "", fmt.Errorf("sock_diag: send: %w", err)
		}
	recv:
		for {
			n, _, err := unix.Recvfrom(fd, buf, 0)
			if err != nil {
				return "", fmt.Errorf("sock_diag: receive: %w", err)
			}
			msgs, err := syscall.ParseNetlinkMessage(buf[:n])
			if err != nil {
				return "", fmt.Errorf("sock_diag: %w", err)
			}
			for _, m := range msgs {
				switch m.Header.Type {
				case unix.NLMSG_DONE:
					break recv
				case unix.NLMSG_ERROR:
					if len(m.Data) >= 4 {
						if code := int32(binary.NativeEndian.Uint32(m.Data)); code != 0 {
							return "", fmt.Errorf("sock_diag: %w", unix.Errno(-code))
						}
					}
					break recv
				case unix.SOCK_DIAG_BY_FAMILY:
					// struct inet_diag_msg: family, state, timer, retrans, the
					// 48-byte id (sport, dport big-endian first), expires,
					// rqueue, wqueue, uid, inode.
					if len(m.Data) < 72 {
						return "", errors.New("sock_diag: short inet_diag_msg")
					}
					sport := binary.BigEndian.Uint16(m.Data[4:6])
					if m.Data[1] == 10 && int(sport) == port { // TCP_LISTEN
						inodes = append(inodes, strconv.FormatUint(uint64(binary.NativeEndian.Uint32(m.Data[68:72])), 10))
					}
				}
			}
		}
	}
	slices.Sort(inodes)
	return strings.Join(slices.Compact(inodes), " "), nil
}

// diagRequest is a dump request for family's TCP sockets in LISTEN on port:
// struct nlmsghdr then struct inet_diag_req_v2.
func diagRequest(family uint8, port int, seq uint32) []byte {
	const hdr, req = 16, 56
	b := make([]byte, hdr+req)
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], hdr+req)
	ne.PutUint16(b[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(b[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	ne.PutUint32(b[8:], seq)
	r := b[hdr:]
	r[0], r[1] = family, unix.IPPROTO_TCP
	ne.PutUint32(r[4:], 1<<10) // idiag_states: TCP_LISTEN only
	binary.BigEndian.PutUint16(r[8:], uint16(port))
	return b
}
