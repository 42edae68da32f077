//go:build !linux

package hostwatch

import "errors"

// listenDiag needs Linux's NETLINK_SOCK_DIAG; elsewhere listenInodes reads
// /proc/net/tcp (where there is one).
func listenDiag(int) (string, error) { return "", errors.ErrUnsupported }
