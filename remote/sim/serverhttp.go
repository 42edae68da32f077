package sim

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// routes serves the SGLang endpoints flightdeck uses: /health (503 while
// starting or stopping), /health_generate, /v1/models, /get_model_info, and
// OpenAI-style /v1/completions and /v1/chat/completions (SSE when stream).
func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", s.health)
	mux.HandleFunc("GET /health_generate", s.health)
	mux.HandleFunc("GET /v1/models", s.models)
	mux.HandleFunc("GET /get_model_info", s.modelInfo)
	mux.HandleFunc("GET /model_info", s.modelInfo)
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { s.complete(w, r, false) })
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { s.complete(w, r, true) })
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		mux.ServeHTTP(sw, r)
		s.accessLog(r.Method+" "+r.URL.RequestURI(), sw.code)
	})
}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *server) health(w http.ResponseWriter, r *http.Request) {
	if !s.isReady() {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	if r.URL.Path == "/health_generate" {
		req := s.eng.submit(1, 1)
		select {
		case <-req.done:
		case <-r.Context().Done():
			req.cancelled.Store(true)
			return
		}
		if req.generated < req.max { // dropped by a stopping engine: no token came
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
	}
	w.WriteHeader(http.StatusOK)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func apiError(w http.ResponseWriter, code int, typ, msg string) {
	writeJSON(w, code, map[string]any{"object": "error", "message": msg, "type": typ, "param": nil, "code": code})
}

func (s *server) models(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{map[string]any{
		"id": s.opt.servedName, "object": "model", "created": s.started.Unix(), "owned_by": "sglang",
		"root": s.opt.servedName, "max_model_len": maxContext,
	}}})
}

func (s *server) modelInfo(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"model_path": s.opt.modelPath, "tokenizer_path": s.opt.modelPath,
		"is_generation": true, "preferred_sampling_params": nil, "weight_version": "default"})
}

// completionRequest is the subset of the OpenAI request the fake honours.
type completionRequest struct {
	Model    string          `json:"model"`
	Prompt   json.RawMessage `json:"prompt"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	MaxTokens *int `json:"max_tokens"`
	// IgnoreEOS is SGLang's and vLLM's "generate max_tokens whatever the
	// model says"; the fake never stops early, so it changes nothing.
	IgnoreEOS           bool `json:"ignore_eos"`
	MaxCompletionTokens *int `json:"max_completion_tokens"`
	Stream              bool `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	TotalTokens      int `json:"total_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// vocab is what the fake model "says": one entry per token.
var vocab = strings.Fields("the GPU decode step reads the KV cache while NCCL all-reduce moves partial sums across eight ranks and the scheduler batches requests")

// abortResponse ends the request's response by dropping its connection,
// without the rest of the body (for SSE: no finish chunk, usage or
// [DONE]; for chunked JSON: no terminating chunk), as a server killed in
// the middle of a generation does. It does not return.
//
// The engine closes a request's token channel when the request has all
// its tokens, or when it stops (the server is shutting down) with the
// request unfinished; the fake never stops early otherwise (it ignores
// EOS), so fewer tokens than max_tokens means the latter, and a normal
// end there would read as a successful, short generation.
func abortResponse() { panic(http.ErrAbortHandler) }

func (s *server) complete(w http.ResponseWriter, r *http.Request, chat bool) {
	if !s.isReady() {
		apiError(w, http.StatusServiceUnavailable, "ServiceUnavailableError", "The server is not ready.")
		return
	}
	var req completionRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 8<<20)).Decode(&req); err != nil {
		apiError(w, http.StatusBadRequest, "BadRequestError", "invalid JSON body: "+err.Error())
		return
	}
	promptChars := len(req.Prompt)
	for _, m := range req.Messages {
		promptChars += len(m.Content) + 8
	}
	if chat && len(req.Messages) == 0 {
		apiError(w, http.StatusBadRequest, "BadRequestError", "messages must be a non-empty list")
		return
	}
	if !chat && len(req.Prompt) == 0 {
		apiError(w, http.StatusBadRequest, "BadRequestError", "prompt is required")
		return
	}
	maxTok := 16
	if req.MaxTokens != nil {
		maxTok = *req.MaxTokens
	}
	if req.MaxCompletionTokens != nil {
		maxTok = *req.MaxCompletionTokens
	}
	if maxTok < 1 || maxTok > maxContext {
		apiError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf("max_tokens must be in 1..%d", maxContext))
		return
	}
	prompt := max(1, promptChars/4)
	// A list of token ids (what benchmark clients send) is counted
	// exactly, as a real server does.
	var ids []int
	if !chat && json.Unmarshal(req.Prompt, &ids) == nil && len(ids) > 0 {
		prompt = len(ids)
	}
	model := req.Model
	if model == "" {
		model = s.opt.servedName
	}
	idb := make([]byte, 16)
	rand.Read(idb)
	id, object := hex.EncodeToString(idb), "text_completion"
	if chat {
		object = "chat.completion"
	}
	created := time.Now().Unix()

	gen := s.eng.submit(prompt, maxTok)
	stop := func() { gen.cancelled.Store(true) }
	u := usage{PromptTokens: prompt}
	word := 0
	next := func(k int) string {
		var b strings.Builder
		for range k {
			b.WriteString(" " + vocab[word%len(vocab)])
			word++
		}
		return b.String()
	}

	if !req.Stream {
		var text strings.Builder
		for {
			select {
			case <-r.Context().Done():
				stop()
				return
			case k, ok := <-gen.tokens:
				if ok {
					text.WriteString(next(k))
					u.CompletionTokens += k
					continue
				}
			}
			break
		}
		if u.CompletionTokens < maxTok {
			abortResponse() // the engine stopped under it
		}
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
		choice := map[string]any{"index": 0, "logprobs": nil, "finish_reason": "length", "matched_stop": nil}
		if chat {
			choice["message"] = map[string]any{"role": "assistant", "content": text.String()}
		} else {
			choice["text"] = text.String()
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": object, "created": created,
			"model": model, "choices": []any{choice}, "usage": u})
		return
	}

	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if chat {
		object = "chat.completion.chunk"
	}
	send := func(v any) bool {
		b, _ := json.Marshal(v)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	chunk := func(text string, finish any) map[string]any {
		c := map[string]any{"index": 0, "logprobs": nil, "finish_reason": finish}
		if chat {
			c["delta"] = map[string]any{"role": nil, "content": text}
		} else {
			c["text"] = text
		}
		if finish != nil {
			c["matched_stop"] = nil
		}
		return map[string]any{"id": id, "object": object, "created": created, "model": model, "choices": []any{c}, "usage": nil}
	}
	if chat { // the first chunk carries only the role
		first := map[string]any{"id": id, "object": object, "created": created, "model": model, "usage": nil,
			"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant"}, "logprobs": nil, "finish_reason": nil}}}
		if !send(first) {
			stop()
			return
		}
	}
	for {
		select {
		case <-r.Context().Done():
			stop()
			return
		case k, ok := <-gen.tokens:
			if ok {
				u.CompletionTokens += k
				if !send(chunk(next(k), nil)) {
					stop()
					return
				}
				continue
			}
		}
		break
	}
	if u.CompletionTokens < maxTok {
		abortResponse() // the engine stopped under it: no finish, no usage, no [DONE]
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	send(chunk("", "length"))
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		send(map[string]any{"id": id, "object": object, "created": created, "model": model, "choices": []any{}, "usage": u})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}
