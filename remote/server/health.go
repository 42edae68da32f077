package server

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
)

// HealthPaths are the endpoints Health tries, in order: SGLang's and
// vLLM's /health, then the OpenAI-compatible model list, which every
// server answers once it serves.
var HealthPaths = []string{"/health", "/v1/models"}

// Health asks the server listening on 127.0.0.1:port of the host for each
// of HealthPaths through d (the SSH connection's port forward, or a direct
// dial for the local host) and returns the first path that answered
// 200 OK. Each request is bounded by ctx and by 5 s. Errors name the last
// status or the dial failure (e.g. "connection refused": nothing listens
// yet).
func Health(ctx context.Context, d remote.Dialer, port int) (string, error) {
	if port <= 0 || port > 65535 {
		return "", fmt.Errorf("health: port %d out of range", port)
	}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		},
		DisableKeepAlives: true,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	var last error
	for _, p := range HealthPaths {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(port)+p, nil)
		if err != nil {
			return "", err
		}
		resp, err := client.Do(req)
		if err != nil {
			last = fmt.Errorf("health %s: %w", p, err)
			if ctx.Err() != nil {
				return "", last
			}
			continue
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return p, nil
		}
		last = fmt.Errorf("health %s: %s", p, resp.Status)
	}
	return "", last
}
