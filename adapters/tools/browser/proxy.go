package browser

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/adapters/sandbox"
)

// filterProxy is the way out of a browser whose session's policy filters
// the network (sandbox.network_allow) or cuts it (off): an HTTP proxy on
// this machine's loopback that lets through, as the sandbox's own proxy
// does, only the allowed hosts (sandbox.Allowed) and refuses the rest
// with a page saying why. The browser is told to send every request to
// it (see launchSandboxed for why the browser cannot sit behind the
// sandbox's own).
type filterProxy struct {
	ln    net.Listener
	allow []string
	log   zerolog.Logger
	wg    sync.WaitGroup
	// conns bounds the connections served at once.
	conns chan struct{}
}

func startProxy(allow []string, log zerolog.Logger) (*filterProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("browser proxy: %w", err)
	}
	p := &filterProxy{ln: ln, allow: allow, log: log, conns: make(chan struct{}, 128)}
	p.wg.Go(p.serve)
	return p, nil
}

// URL is the proxy's address for --proxy-server.
func (p *filterProxy) URL() string { return "http://" + p.ln.Addr().String() }

// Close stops accepting; connections being served end on their own.
func (p *filterProxy) Close() error {
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *filterProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		select {
		case p.conns <- struct{}{}:
			go func() {
				defer func() { <-p.conns }()
				p.handle(c)
			}()
		default:
			c.Close()
		}
	}
}

// handle serves one connection: a CONNECT tunnel or one plain HTTP
// request, to an allowed host only.
func (p *filterProxy) handle(c net.Conn) {
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	lr := &io.LimitedReader{R: c, N: 64 << 10}
	br := bufio.NewReader(lr)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	lr.N = math.MaxInt64
	c.SetReadDeadline(time.Time{})
	host, port := req.URL.Hostname(), req.URL.Port()
	if req.Method == http.MethodConnect {
		h, pt, err := net.SplitHostPort(req.Host)
		if err != nil {
			h, pt = req.Host, "443"
		}
		host, port = h, pt
	} else if port == "" {
		port = "80"
	}
	allowed := sandbox.Allowed(p.allow, host, port)
	p.log.Info().Str("host", host).Str("port", port).Bool("allowed", allowed).Msg("browser network request")
	if !allowed {
		msg := fmt.Sprintf("hermes browser: %s port %s is not allowed (sandbox.network_allow)\n", host, port)
		if len(p.allow) == 0 {
			msg = fmt.Sprintf("hermes browser: the network is off (sandbox.network: off); %s port %s cannot be reached\n", host, port)
		}
		fmt.Fprintf(c, "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(msg), msg)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	up, err := (&net.Dialer{}).DialContext(ctx, "tcp", net.JoinHostPort(host, port))
	cancel()
	if err != nil {
		msg := fmt.Sprintf("hermes browser: cannot reach %s: %v\n", host, err)
		fmt.Fprintf(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(msg), msg)
		return
	}
	defer up.Close()
	if req.Method == http.MethodConnect {
		fmt.Fprint(c, "HTTP/1.1 200 Connection established\r\n\r\n")
		go func() {
			io.Copy(up, br)
			if cw, ok := up.(interface{ CloseWrite() error }); ok {
				cw.CloseWrite()
			}
		}()
		io.Copy(c, up)
		return
	}
	// One request per connection: a second one on a kept-alive
	// connection could name another host.
	req.Header.Del("Proxy-Connection")
	req.Header.Del("Proxy-Authorization")
	req.Header.Set("Connection", "close")
	req.Close = true
	req.RequestURI = ""
	if err := req.Write(up); err != nil {
		return
	}
	io.Copy(c, up)
}
