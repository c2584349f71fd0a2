package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// proxy serves one connection made to the proxy port inside a NetAllow
// sandbox: an HTTP CONNECT tunnel or one plain HTTP request, to an
// allowed host only. Everything else gets 403 and a line saying why.
func (sb *Sandbox) proxy(f *os.File) {
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	// The request's head is read in Hermes' own memory: bounded, so that
	// no command can grow it (the sandbox's ceilings do not reach here).
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
	allowed := Allowed(sb.policy.Allow, host, port)
	sb.opts.Log.Info().Str("host", host).Str("port", port).Bool("allowed", allowed).Msg("sandbox network request")
	if !allowed {
		msg := fmt.Sprintf("hermes sandbox: %s port %s is not allowed (sandbox.network_allow)\n", host, port)
		fmt.Fprintf(c, "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(msg), msg)
		return
	}
	dial := sb.opts.Dial
	if dial == nil {
		d := &net.Dialer{Timeout: 30 * time.Second}
		dial = d.DialContext
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	up, err := dial(ctx, "tcp", net.JoinHostPort(host, port))
	cancel()
	if err != nil {
		msg := fmt.Sprintf("hermes sandbox: cannot reach %s: %v\n", host, err)
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

// Allowed tells whether host and port match one of the allowed entries:
// a name equal to host (case aside), or "*.name" / ".name" for it and its
// subdomains; an entry without a port allows 80 and 443, "name:port"
// that port only.
func Allowed(allow []string, host, port string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "" {
		return false
	}
	for _, a := range allow {
		a = strings.ToLower(strings.TrimSpace(a))
		if h, p, err := net.SplitHostPort(a); err == nil {
			if p != port {
				continue
			}
			a = h
		} else if port != "80" && port != "443" {
			continue
		}
		a = strings.TrimSuffix(a, ".")
		switch {
		case a == "":
		case strings.HasPrefix(a, "*."):
			if host == a[2:] || strings.HasSuffix(host, a[1:]) {
				return true
			}
		case strings.HasPrefix(a, "."):
			if host == a[1:] || strings.HasSuffix(host, a) {
				return true
			}
		case host == a:
			return true
		}
	}
	return false
}
