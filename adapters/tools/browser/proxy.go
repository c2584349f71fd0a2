package browser

import (
	"fmt"
	"net"
	"sync"

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

// handle serves one connection (sandbox.ServeProxy: the same rules as
// the sandbox's own proxy).
func (p *filterProxy) handle(c net.Conn) {
	sandbox.ServeProxy(c, sandbox.Relay{Allow: p.allow, Name: "hermes browser", Log: p.log, Event: "browser network request",
		Refused: func(host, port string) string {
			if len(p.allow) == 0 {
				return fmt.Sprintf("hermes browser: the network is off (sandbox.network: off); %s port %s cannot be reached\n", host, port)
			}
			return fmt.Sprintf("hermes browser: %s port %s is not allowed (sandbox.network_allow)\n", host, port)
		}})
}
