package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"time"

	"github.com/rs/zerolog"
)

// Relay is what ServeProxy needs to know of the proxy it serves for.
type Relay struct {
	// Allow is the allow-list (Allowed's entries).
	Allow []string
	// Name starts the lines it answers refusals and failures with
	// ("hermes sandbox").
	Name string
	// Refused, when set, words the refusal of host:port (default: not
	// allowed by sandbox.network_allow).
	Refused func(host, port string) string
	// Dial reaches an allowed host (default: a net.Dialer).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Log hears each request (host, port, allowed) as Event.
	Log   zerolog.Logger
	Event string
}

// ServeProxy serves one proxy connection: an HTTP CONNECT tunnel or one
// plain HTTP request, to a host r allows only; everything else gets 403
// and a line saying why. The request's head is read bounded (64 KiB) in
// this process's memory. It closes c.
func ServeProxy(c net.Conn, r Relay) {
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	lr := &io.LimitedReader{R: c, N: 64 << 10}
	br := bufio.NewReader(lr)
	req, err := http.ReadRequest(br)
	if err != nil {
		if lr.N <= 0 {
			fmt.Fprint(c, "HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\n\r\n")
		}
		return
	}
	lr.N = math.MaxInt64 // a body or a tunnel is not the head
	c.SetReadDeadline(time.Time{})
	host, port := req.URL.Hostname(), req.URL.Port()
	if req.Method == http.MethodConnect {
		h, p, err := net.SplitHostPort(req.Host)
		if err != nil {
			h, p = req.Host, "443"
		}
		host, port = h, p
	} else if port == "" {
		port = "80"
	}
	allowed := Allowed(r.Allow, host, port)
	r.Log.Info().Str("host", host).Str("port", port).Bool("allowed", allowed).Msg(r.Event)
	if !allowed {
		msg := fmt.Sprintf("%s: %s port %s is not allowed (sandbox.network_allow)\n", r.Name, host, port)
		if r.Refused != nil {
			msg = r.Refused(host, port)
		}
		fmt.Fprintf(c, "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(msg), msg)
		return
	}
	dial := r.Dial
	if dial == nil {
		d := &net.Dialer{Timeout: 30 * time.Second}
		dial = d.DialContext
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	up, err := dial(ctx, "tcp", net.JoinHostPort(host, port))
	cancel()
	if err != nil {
		msg := fmt.Sprintf("%s: cannot reach %s: %v\n", r.Name, host, err)
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
	// One request per connection: a second request on a kept-alive
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
