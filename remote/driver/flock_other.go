//go:build !unix

package driver

import "errors"

// flockFile is unavailable off Unix: the agent runs on Linux GPU hosts.
func flockFile(path string) (unlock func(), err error) {
	return nil, errors.New("driver lock: flock needs a Unix host")
}
