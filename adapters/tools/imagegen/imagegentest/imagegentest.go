// Package imagegentest runs stand-ins, on loopback, for the image services
// image_generate speaks that no test here can reach: FAL's queue API
// (queue.fal.run), OpenRouter's chat completions with image output, xAI's
// images API, DeepInfra's OpenAI-compatible images API and model catalog,
// and Krea's job API. Each speaks its service's published wire format
// (paths, auth header, JSON shapes, error bodies), records what it was
// sent, and can be told to fail the ways the real ones do. They are fakes,
// not the services: they generate nothing, answering with the image they
// are given.
package imagegentest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// Kind names the service a Server stands in for.
type Kind string

// The services.
const (
	FAL        Kind = "fal"
	OpenRouter Kind = "openrouter"
	XAI        Kind = "xai"
	DeepInfra  Kind = "deepinfra"
	Krea       Kind = "krea"
)

// Behaviour is how a Server answers.
type Behaviour struct {
	// Image is the generated image's bytes (whatever they are: a test
	// may hand it HTML or too many bytes).
	Image []byte
	// Fail makes the job fail with this message: FAL's result answers
	// 500 with {"detail","error_type"}, Krea's job ends failed,
	// OpenRouter, xAI and DeepInfra answer 400 with their error body.
	Fail string
	// Hang keeps a queued job (FAL, Krea) in progress for ever; the
	// synchronous services answer only when the request is abandoned.
	Hang bool
	// NoImage answers success without an image.
	NoImage bool
	// Reject answers 404 (OpenRouter's "no endpoints found") for these
	// models.
	Reject []string
	// Polls is how many status polls a queued job takes to complete
	// (0: 2).
	Polls int
	// Flaky answers the first this many status polls (FAL, Krea) with
	// 503, as a service whose runners are being rescheduled does.
	Flaky int
}

// Request is one request a Server received.
type Request struct {
	Method, Path, Query string
	// Auth is the Authorization header.
	Auth string
	// Body is the JSON body, decoded (nil when none).
	Body map[string]any
}

// Server is one stand-in.
type Server struct {
	*httptest.Server
	kind Kind
	key  string

	mu    sync.Mutex
	b     Behaviour
	reqs  []Request
	polls map[string]int
	seq   int
}

// New starts a stand-in for kind accepting key, answering with b.
func New(kind Kind, key string, b Behaviour) *Server {
	s := &Server{kind: kind, key: key, b: b, polls: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Set changes how the server answers from now on.
func (s *Server) Set(b Behaviour) {
	s.mu.Lock()
	s.b = b
	s.mu.Unlock()
}

// Requests returns what the server received, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Paths returns "METHOD path" of every request, in order.
func (s *Server) Paths() []string {
	var out []string
	for _, r := range s.Requests() {
		out = append(out, r.Method+" "+r.Path)
	}
	return out
}

// BaseURL is the URL to configure as the service's base_url.
func (s *Server) BaseURL() string {
	switch s.kind {
	case XAI:
		return s.URL + "/v1"
	case DeepInfra:
		return s.URL + "/v1/openai"
	case OpenRouter:
		return s.URL + "/api/v1"
	}
	return s.URL
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	json.Unmarshal(raw, &body)
	s.mu.Lock()
	s.reqs = append(s.reqs, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Auth: r.Header.Get("Authorization"), Body: body})
	b := s.b
	s.mu.Unlock()

	// The generated files are on the service's CDN, fetched without a key.
	if strings.HasPrefix(r.URL.Path, "/files/") {
		w.Header().Set("Content-Type", "image/png")
		w.Write(b.Image)
		return
	}
	scheme := "Bearer "
	if s.kind == FAL {
		scheme = "Key "
	}
	if r.Header.Get("Authorization") != scheme+s.key {
		s.unauthorized(w)
		return
	}
	switch s.kind {
	case FAL:
		s.fal(w, r, body, b)
	case OpenRouter:
		s.openrouter(w, r, body, b)
	case XAI, DeepInfra:
		s.images(w, r, body, b)
	case Krea:
		s.krea(w, r, body, b)
	}
}

// unauthorized answers as each service does to a bad key.
func (s *Server) unauthorized(w http.ResponseWriter) {
	switch s.kind {
	case FAL:
		reply(w, 401, map[string]any{"detail": "Cannot access application 'fal-ai/flux-2'. Authentication is required to access this application."})
	case OpenRouter:
		reply(w, 401, map[string]any{"error": map[string]any{"message": "No auth credentials found", "code": 401}})
	case XAI:
		reply(w, 401, map[string]any{"code": "Client specified an invalid argument", "error": "Incorrect API key provided: ***. You can obtain an API key from https://console.x.ai."})
	case DeepInfra:
		reply(w, 401, map[string]any{"error": map[string]any{"message": "Unauthorized: invalid or missing API token", "type": "invalid_request_error"}})
	case Krea:
		reply(w, 401, map[string]any{"error": "Invalid API token"})
	}
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func (s *Server) next() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return fmt.Sprintf("req-%04d", s.seq)
}

// progress counts a poll of job id and says whether it is done.
func (s *Server) progress(id string, b Behaviour) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.polls[id]++
	n := b.Polls
	if n <= 0 {
		n = 2
	}
	return !b.Hang && s.polls[id] >= n
}

// fal is the queue API: POST /{model} submits; under /{owner}/{app}/
// requests/{id}: GET status, GET the result, PUT cancel.
func (s *Server) fal(w http.ResponseWriter, r *http.Request, body map[string]any, b Behaviour) {
	path := strings.Trim(r.URL.Path, "/")
	app, rest, isReq := strings.Cut(path, "/requests/")
	if !isReq {
		if r.Method != http.MethodPost {
			reply(w, 405, map[string]any{"detail": "Method Not Allowed"})
			return
		}
		if p, _ := body["prompt"].(string); p == "" {
			reply(w, 422, map[string]any{"detail": []any{map[string]any{"loc": []any{"body", "prompt"}, "msg": "field required", "type": "value_error.missing"}}})
			return
		}
		parts := strings.Split(path, "/")
		if len(parts) > 2 {
			parts = parts[:2]
		}
		base := s.URL + "/" + strings.Join(parts, "/") + "/requests/"
		id := s.next()
		reply(w, 200, map[string]any{"request_id": id, "status": "IN_QUEUE", "queue_position": 0,
			"response_url": base + id, "status_url": base + id + "/status", "cancel_url": base + id + "/cancel"})
		return
	}
	id, op, _ := strings.Cut(rest, "/")
	switch {
	case op == "status" && r.Method == http.MethodGet:
		if s.flaky(b) {
			w.Header().Set("X-Fal-Error-Type", "runner_scheduling_failure")
			reply(w, 503, map[string]any{"detail": "No runner could be allocated", "error_type": "runner_scheduling_failure"})
			return
		}
		if s.progress(id, b) {
			reply(w, 200, map[string]any{"status": "COMPLETED", "response_url": s.URL + "/" + app + "/requests/" + id, "logs": []any{}, "metrics": map[string]any{"inference_time": 0.4}})
			return
		}
		st := "IN_QUEUE"
		if s.pollsOf(id) > 1 {
			st = "IN_PROGRESS"
		}
		reply(w, 202, map[string]any{"status": st, "queue_position": 0, "response_url": s.URL + "/" + app + "/requests/" + id})
	case op == "cancel" && r.Method == http.MethodPut:
		reply(w, 202, map[string]any{"status": "CANCELLATION_REQUESTED"})
	case op == "" && r.Method == http.MethodGet:
		switch {
		case b.Fail != "":
			w.Header().Set("X-Fal-Error-Type", "runner_server_error")
			reply(w, 500, map[string]any{"detail": b.Fail, "error_type": "runner_server_error"})
		case b.NoImage:
			reply(w, 200, map[string]any{"images": []any{}, "seed": 42, "has_nsfw_concepts": []any{}})
		default:
			reply(w, 200, map[string]any{"images": []any{map[string]any{"url": s.URL + "/files/" + id + ".png", "width": 1024, "height": 768, "content_type": "image/png"}},
				"seed": 42, "has_nsfw_concepts": []any{false}, "prompt": "", "timings": map[string]any{"inference": 0.4}})
		}
	default:
		reply(w, 404, map[string]any{"detail": "Not Found"})
	}
}

// flaky says whether this poll is one of the first b.Flaky, which fail.
func (s *Server) flaky(b Behaviour) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b.Flaky <= 0 {
		return false
	}
	s.polls["flaky"]++
	return s.polls["flaky"] <= b.Flaky
}

func (s *Server) pollsOf(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.polls[id]
}

// openrouter is POST /api/v1/chat/completions with image output.
func (s *Server) openrouter(w http.ResponseWriter, r *http.Request, body map[string]any, b Behaviour) {
	if r.URL.Path != "/api/v1/chat/completions" || r.Method != http.MethodPost {
		reply(w, 404, map[string]any{"error": map[string]any{"message": "Not Found", "code": 404}})
		return
	}
	model, _ := body["model"].(string)
	for _, m := range b.Reject {
		if m == model {
			reply(w, 404, map[string]any{"error": map[string]any{"message": "No endpoints found for " + model + ".", "code": 404}})
			return
		}
	}
	if s.hang(w, r, b) {
		return
	}
	if b.Fail != "" {
		reply(w, 400, map[string]any{"error": map[string]any{"message": b.Fail, "code": 400}})
		return
	}
	msg := map[string]any{"role": "assistant", "content": "I can only describe images."}
	if !b.NoImage && hasImageModality(body) {
		msg["content"] = "Here is your image."
		msg["images"] = []any{map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64," + base64.StdEncoding.EncodeToString(b.Image)}}}
	}
	reply(w, 200, map[string]any{"id": "gen-" + s.next(), "object": "chat.completion", "created": time.Now().Unix(), "model": model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": msg}},
		"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 1290, "total_tokens": 1300}})
}

func hasImageModality(body map[string]any) bool {
	mods, _ := body["modalities"].([]any)
	for _, m := range mods {
		if m == "image" {
			return true
		}
	}
	return false
}

// hang holds a synchronous request until the client gives up.
func (s *Server) hang(w http.ResponseWriter, r *http.Request, b Behaviour) bool {
	if !b.Hang {
		return false
	}
	select {
	case <-r.Context().Done():
	case <-time.After(time.Minute):
	}
	reply(w, 504, map[string]any{"error": "timeout"})
	return true
}

// images is the images API: xAI's (/v1/images/generations, answering a
// URL on its CDN) and DeepInfra's (/v1/openai/images/generations, b64_json,
// and /v1/openai/models, the catalog).
func (s *Server) images(w http.ResponseWriter, r *http.Request, body map[string]any, b Behaviour) {
	prefix := "/v1"
	if s.kind == DeepInfra {
		prefix = "/v1/openai"
		if r.URL.Path == prefix+"/models" && r.Method == http.MethodGet {
			reply(w, 200, map[string]any{"object": "list", "data": []any{
				map[string]any{"id": "meta-llama/Llama-3.3-70B-Instruct", "object": "model", "metadata": map[string]any{"tags": []any{"chat"}}},
				map[string]any{"id": "retired/model", "object": "model", "metadata": nil},
				map[string]any{"id": "black-forest-labs/FLUX-1-schnell", "object": "model", "metadata": map[string]any{"tags": []any{"image-gen"}, "default_width": 1024}},
			}})
			return
		}
	}
	if r.URL.Path != prefix+"/images/generations" || r.Method != http.MethodPost {
		reply(w, 404, map[string]any{"error": "Not Found"})
		return
	}
	if s.hang(w, r, b) {
		return
	}
	if b.Fail != "" {
		if s.kind == XAI {
			reply(w, 400, map[string]any{"code": "Client specified an invalid argument", "error": b.Fail})
		} else {
			reply(w, 400, map[string]any{"error": map[string]any{"message": b.Fail, "type": "invalid_request_error"}})
		}
		return
	}
	if b.NoImage {
		reply(w, 200, map[string]any{"created": time.Now().Unix(), "data": []any{}})
		return
	}
	d := map[string]any{"b64_json": base64.StdEncoding.EncodeToString(b.Image)}
	if s.kind == XAI {
		d = map[string]any{"url": s.URL + "/files/xai-tmp-" + s.next() + ".png", "revised_prompt": "revised: " + fmt.Sprint(body["prompt"])}
	}
	reply(w, 200, map[string]any{"created": time.Now().Unix(), "data": []any{d}})
}

// krea is POST /generate/image/krea/krea-2/{size} and GET /jobs/{id}.
func (s *Server) krea(w http.ResponseWriter, r *http.Request, body map[string]any, b Behaviour) {
	switch {
	case strings.HasPrefix(r.URL.Path, "/generate/image/krea/krea-2/") && r.Method == http.MethodPost:
		switch strings.TrimPrefix(r.URL.Path, "/generate/image/krea/krea-2/") {
		case "medium", "large", "medium-turbo":
		default:
			reply(w, 404, map[string]any{"error": "Not Found"})
			return
		}
		reply(w, 200, map[string]any{"job_id": s.next(), "status": "queued", "created_at": time.Now().UTC().Format(time.RFC3339)})
	case strings.HasPrefix(r.URL.Path, "/jobs/") && r.Method == http.MethodGet:
		id := strings.TrimPrefix(r.URL.Path, "/jobs/")
		if s.flaky(b) {
			reply(w, 503, map[string]any{"error": "Service Unavailable"})
			return
		}
		if !s.progress(id, b) {
			reply(w, 200, map[string]any{"job_id": id, "status": "processing", "completed_at": nil})
			return
		}
		done := time.Now().UTC().Format(time.RFC3339)
		switch {
		case b.Fail != "":
			reply(w, 200, map[string]any{"job_id": id, "status": "failed", "completed_at": done, "result": map[string]any{"error": b.Fail}})
		case b.NoImage:
			reply(w, 200, map[string]any{"job_id": id, "status": "completed", "completed_at": done, "result": map[string]any{"urls": []any{}}})
		default:
			reply(w, 200, map[string]any{"job_id": id, "status": "completed", "completed_at": done, "result": map[string]any{"urls": []any{s.URL + "/files/" + id + ".png"}}})
		}
	default:
		reply(w, 404, map[string]any{"error": "Not Found"})
	}
}
