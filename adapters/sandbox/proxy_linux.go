package sandbox

import (
	"net"
	"os"
	"strings"
)

// proxy serves one connection made to the proxy port inside a NetAllow
// sandbox (ServeProxy, with the sandbox's policy and dialer).
func (sb *Sandbox) proxy(f *os.File) {
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return
	}
	ServeProxy(c, Relay{Allow: sb.policy.Allow, Name: "hermes sandbox", Dial: sb.opts.Dial, Log: sb.opts.Log, Event: "sandbox network request"})
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
