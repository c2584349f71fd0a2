package openai

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strings"

	"github.com/openai/openai-go/option"
)

// dropSSEComments removes SSE comment lines (": ping") and the blank line
// that closes a comment-only block. The SDK's decoder dispatches such a
// block as an event with empty data and fails on it ("unexpected end of
// JSON input"); servers built on sse-starlette (llama-cpp-python, vLLM's
// front ends) send a ping comment every 15 seconds, which broke any answer
// slower than that. The SSE specification says comments are ignored.
func dropSSEComments() option.RequestOption {
	return option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		resp, err := next(req)
		if err == nil && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			resp.Body = &commentFilter{src: resp.Body, r: bufio.NewReader(resp.Body)}
		}
		return resp, err
	})
}

type commentFilter struct {
	src     io.ReadCloser
	r       *bufio.Reader
	pending bytes.Buffer
	// block is true once the current event block holds a non-comment line.
	block bool
	err   error
}

func (c *commentFilter) Read(p []byte) (int, error) {
	for c.pending.Len() == 0 && c.err == nil {
		line, err := c.r.ReadBytes('\n')
		if len(line) > 0 {
			trimmed := bytes.TrimRight(line, "\r\n")
			switch {
			case len(trimmed) == 0:
				if c.block {
					c.pending.Write(line)
				}
				c.block = false
			case trimmed[0] == ':':
				// comment: dropped
			default:
				c.block = true
				c.pending.Write(line)
			}
		}
		if err != nil {
			c.err = err
		}
	}
	if c.pending.Len() > 0 {
		return c.pending.Read(p)
	}
	return 0, c.err
}

func (c *commentFilter) Close() error { return c.src.Close() }
