package serverlog

import (
	"bytes"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

var (
	kwSGLangReady   = []byte("The server is fired up and ready to roll!")
	kwVLLMAPIServer = []byte("Starting vLLM API server ")
	kwVLLMServer    = []byte("Starting vLLM server on ")
	kwUvicorn       = []byte("Uvicorn running on ")
	kwOn            = []byte(" on ")
)

// ParseReady recognises a line that says the server is ready to serve:
//   - SGLang "The server is fired up and ready to roll!", logged after the
//     warm-up request succeeded (research notes §1.4);
//   - vLLM "Starting vLLM API server N on URL" (2025-12, PR #30749) and
//     "Starting vLLM server on URL" (2026, PR #44106).
//
// The uvicorn line "Uvicorn running on URL" is not readiness for SGLang
// (it only means the port is bound); see ParseHTTPBound. Text is the line,
// sanitised. It allocates only on a match.
func ParseReady(line []byte) (event.ServerReady, bool) {
	if bytes.Index(line, kwSGLangReady) >= 0 {
		return event.ServerReady{Server: ServerSGLang, Text: sanitize.Line(line)}, true
	}
	at := bytes.Index(line, kwVLLMAPIServer)
	if at < 0 {
		at = bytes.Index(line, kwVLLMServer)
	}
	if at < 0 {
		return event.ServerReady{}, false
	}
	var buf [cleanBufSize]byte
	c := clean(line, &buf)
	r := event.ServerReady{Server: ServerVLLM, Text: sanitize.Line(line)}
	if on := bytes.Index(c, kwOn); on >= 0 {
		r.URL = urlAt(c[on+len(kwOn):])
	}
	return r, true
}

// ParseHTTPBound recognises uvicorn's "Uvicorn running on
// http://0.0.0.0:8000 (Press CTRL+C to quit)" and returns the URL. For
// vLLM ≤ 0.6 this is the readiness line (vllm#6194); for SGLang it only
// means the HTTP port is bound and "The server is fired up" is still to
// come. sglangPrefix reports that the line carries SGLang's own
// "[YYYY-MM-DD HH:MM:SS]" prefix, i.e. it was logged by an SGLang server.
func ParseHTTPBound(line []byte) (url string, sglangPrefix bool, ok bool) {
	at := bytes.Index(line, kwUvicorn)
	if at < 0 {
		return "", false, false
	}
	var buf [cleanBufSize]byte
	c := clean(line, &buf)
	if at = bytes.Index(c, kwUvicorn); at < 0 {
		return "", false, false
	}
	return urlAt(c[at+len(kwUvicorn):]), hasSGLangPrefix(c[:at]), true
}

// urlAt returns the http(s) URL at the start of b, "" when there is none.
func urlAt(b []byte) string {
	if !bytes.HasPrefix(b, []byte("http://")) && !bytes.HasPrefix(b, []byte("https://")) {
		return ""
	}
	end := bytes.IndexAny(b, " \t\r")
	if end < 0 {
		end = len(b)
	}
	return sanitize.Line(b[:end])
}

// hasSGLangPrefix reports whether prefix holds SGLang's bracketed
// timestamp "[2025-01-07 20:16:02" (with or without a rank tag).
func hasSGLangPrefix(prefix []byte) bool {
	for {
		i := bytes.IndexByte(prefix, '[')
		if i < 0 || len(prefix)-i < 20 {
			return false
		}
		if matchShape(prefix[i+1:i+20], "dddd-dd-dd dd:dd:dd") {
			return true
		}
		prefix = prefix[i+1:]
	}
}
