package stream

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/hermes-go/hermes/actors/model"
)

// Watch is one call's view of its response body, filled in by Guard.
type Watch struct {
	mu     sync.Mutex
	opened bool
	done   bool
	wd     *model.Watchdog
}

type watchKey struct{}

// Start returns a context whose requests Guard checks, and the Watch it
// reports to. Requests without one pass through Guard untouched. Guard
// tells wd (when not nil) the host each request goes to and when its
// answer arrives, for the first-byte timeout.
func Start(ctx context.Context, wd *model.Watchdog) (context.Context, *Watch) {
	w := &Watch{wd: wd}
	return context.WithValue(ctx, watchKey{}, w), w
}

// Opened reports whether a successful event-stream response arrived: a
// failure after it is a cut stream, not an unreachable server.
func (w *Watch) Opened() bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.opened
}

// Done reports whether the body carried chat.completions' `data: [DONE]`,
// which the SDK consumes without showing it.
func (w *Watch) Done() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.done
}

func (w *Watch) set(f func(w *Watch)) {
	w.mu.Lock()
	f(w)
	w.mu.Unlock()
}

// Guard is an SDK middleware (both SDKs take this shape). For a request
// made under Start it checks that a successful answer is an event stream
// (a proxy's HTML page is an error, not an empty answer) and wraps the
// body in a reader that drops SSE comments, bounds lines, events and their
// JSON, and records `[DONE]`. Error bodies of any request are bounded.
func Guard(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	w, _ := req.Context().Value(watchKey{}).(*Watch)
	if w != nil && w.wd != nil {
		w.wd.Sending(req.URL.Host)
	}
	resp, err := next(req)
	if err == nil && w != nil && w.wd != nil {
		w.wd.Answered()
	}
	if err != nil || resp == nil || resp.Body == nil {
		return resp, err
	}
	if resp.StatusCode >= 300 {
		resp.Body = limited{io.LimitReader(resp.Body, MaxErrorBodyBytes), resp.Body}
		return resp, nil
	}
	if w == nil {
		return resp, nil
	}
	r := readers.Get().(*bufio.Reader)
	r.Reset(resp.Body)
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" && !looksLikeSSE(r) {
		resp.Body.Close()
		ct := resp.Header.Get("Content-Type")
		if ct == "" {
			ct = "no Content-Type"
		}
		err := Malformed("HTTP %d with %s instead of an event stream (check base_url and api_mode): %s", resp.StatusCode, ct, snippet(r))
		release(r)
		return nil, err
	}
	w.set(func(w *Watch) { w.opened = true })
	resp.Body = &body{src: resp.Body, r: r, w: w}
	return resp, nil
}

// readers are the 64 KiB buffers the guarded bodies read through, kept
// for the next call: a fresh one per model call was most of what a step
// allocated.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 64<<10) }}

func release(r *bufio.Reader) {
	r.Reset(nil)
	readers.Put(r)
}

type limited struct {
	io.Reader
	io.Closer
}

// looksLikeSSE reads enough of a body that came without the event-stream
// content type to tell whether it is one anyway (some servers omit or
// garble the header): it must start with an SSE field or a comment.
func looksLikeSSE(r *bufio.Reader) bool {
	for n := 1; n <= 64; n++ {
		b, err := r.Peek(n)
		t := bytes.TrimLeft(b, " \t\r\n\ufeff")
		for _, f := range []string{"data:", "event:", "id:", "retry:", ":"} {
			if bytes.HasPrefix(t, []byte(f)) {
				return true
			}
		}
		if len(t) >= len("retry:") || err != nil {
			return false
		}
	}
	return false
}

// snippet is the start of a non-stream body for the error message.
func snippet(r *bufio.Reader) string {
	b, _ := r.Peek(min(r.Buffered(), 512))
	s := strings.Join(strings.Fields(strings.ToValidUTF8(string(b), "?")), " ")
	if s == "" {
		return "(empty body)"
	}
	if len(s) > 160 {
		s = strings.ToValidUTF8(s[:160], "") + "…"
	}
	return s
}

// body is a guarded SSE body. Every line is bounded before the SDK's
// decoder sees it; comment lines, and the blank line closing a
// comment-only block, are dropped: the SSE specification says comments are
// ignored, but openai-go dispatches such a block as an event with empty
// data and fails on it, which broke any answer slower than the ping
// interval of servers built on sse-starlette (llama-cpp-python, vLLM).
type body struct {
	// mu orders Close (which gives r back to the pool) after any Read.
	mu      sync.Mutex
	src     io.ReadCloser
	r       *bufio.Reader // nil once closed
	w       *Watch
	line    []byte
	buf     []byte
	pending []byte
	// block is set once the current event holds a non-comment line; size
	// and values are its bytes and JSON values so far.
	block  bool
	size   int
	values int
	err    error
}

func (b *body) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.r == nil && len(b.pending) == 0 && b.err == nil {
		b.err = errors.New("read on a closed body")
	}
	for len(b.pending) == 0 && b.err == nil {
		line, err := b.readLine()
		if err != nil {
			b.err = err
		}
		if len(line) > 0 {
			if perr := b.take(line); perr != nil {
				b.err = perr
				break
			}
		}
	}
	if len(b.pending) > 0 {
		n := copy(p, b.pending)
		b.pending = b.pending[n:]
		return n, nil
	}
	return 0, b.err
}

// readLine reads one line, newline included, refusing one over
// MaxEventBytes.
func (b *body) readLine() ([]byte, error) {
	b.line = b.line[:0]
	for {
		chunk, err := b.r.ReadSlice('\n')
		if len(b.line)+len(chunk) > MaxEventBytes {
			return nil, Malformed("an SSE line over %d bytes", MaxEventBytes)
		}
		b.line = append(b.line, chunk...)
		if err != bufio.ErrBufferFull {
			return b.line, err
		}
	}
}

// take checks one line and queues it for the decoder unless it is dropped.
func (b *body) take(line []byte) error {
	trimmed := bytes.TrimRight(line, "\r\n")
	switch {
	case len(trimmed) == 0:
		if b.block {
			b.queue(line)
		}
		b.block, b.size, b.values = false, 0, 0
		return nil
	case trimmed[0] == ':':
		return nil
	}
	b.block = true
	b.size += len(line)
	if b.size > MaxEventBytes {
		return Malformed("an SSE event over %d bytes", MaxEventBytes)
	}
	if data, ok := bytes.CutPrefix(trimmed, []byte("data:")); ok {
		if bytes.Equal(bytes.TrimSpace(data), []byte("[DONE]")) {
			b.w.set(func(w *Watch) { w.done = true })
		}
		b.values += jsonValues(data)
		if b.values > MaxEventValues {
			return Malformed("an SSE event with over %d JSON values", MaxEventValues)
		}
	}
	b.queue(line)
	return nil
}

func (b *body) queue(line []byte) {
	b.buf = append(b.buf[:0], line...)
	b.pending = b.buf
}

// jsonValues counts the places a JSON value may start outside strings: a
// bound on the values decoding the line can create. A string cannot span
// lines in valid JSON, so each line starts outside one.
func jsonValues(b []byte) int {
	n := 0
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case escaped:
			escaped = false
		case inString:
			switch c {
			case '\\':
				escaped = true
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[' || c == ',' || c == ':':
			n++
		}
	}
	return n
}

func (b *body) Close() error {
	err := b.src.Close()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.r != nil {
		release(b.r)
		b.r = nil
	}
	return err
}
