package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/adapters/mcpserver"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
	"github.com/hermes-go/hermes/projections/costs"
	"github.com/hermes-go/hermes/projections/history"
	"github.com/hermes-go/hermes/projections/search"
	"github.com/hermes-go/hermes/projections/sessions"
	"github.com/hermes-go/hermes/schema"
)

// serveDepthEnv counts hermes mcp serve processes started by one another:
// an mcp_servers entry that is this Hermes itself would otherwise start
// itself without end.
const serveDepthEnv = "HERMES_MCP_SERVE_DEPTH"

// mcpServeOptions are the flags and arguments of `hermes mcp serve`.
type mcpServeOptions struct {
	app       *app.Factory
	io        app.IOStreams
	addr, key string
}

func mcpServeCmd(g *app.Factory) *cobra.Command {
	opts := &mcpServeOptions{app: g}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve this Hermes to other agents and editors over MCP: stdio, or streamable HTTP with --http ADDR behind a bearer key",
		Long: `Serve this Hermes over MCP. Tools: sessions_list, session_show, search, send_message (runs a turn of
the agent and answers), costs; resources: hermes://sessions and hermes://sessions/{id}.

Without --http it speaks MCP on stdin and stdout (an editor starts it as a command). With --http ADDR it
serves streamable HTTP at http://ADDR/; every request needs "Authorization: Bearer KEY", KEY being --key,
$HERMES_MCP_KEY, or the key kept in $HERMES_HOME/mcp_serve.key (made on first use).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.io = ioOf(cmd)
			return runMCPServe(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.addr, "http", "", "serve streamable HTTP on this address (127.0.0.1:8765) instead of stdio")
	cmd.Flags().StringVar(&opts.key, "key", "", "the bearer key HTTP clients must send (default $HERMES_MCP_KEY, else $HERMES_HOME/mcp_serve.key)")
	return cmd
}

// runMCPServe runs `hermes mcp serve`.
func runMCPServe(ctx context.Context, opts *mcpServeOptions) error {
	depth, _ := strconv.Atoi(os.Getenv(serveDepthEnv))
	if depth >= 1 {
		return fmt.Errorf("hermes mcp serve started by hermes mcp serve (%s=%d): an mcp_servers entry of config.yaml is this Hermes itself; remove it", serveDepthEnv, depth)
	}
	os.Setenv(serveDepthEnv, strconv.Itoa(depth+1))
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	b, err := newBackend(opts.app)
	if err != nil {
		return err
	}
	defer b.Close()
	srv := mcpserver.New(b, app.Version())
	if opts.addr == "" {
		err := srv.Run(ctx, &sdk.StdioTransport{})
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	where := "--key"
	if opts.key == "" {
		if opts.key = os.Getenv("HERMES_MCP_KEY"); opts.key != "" {
			where = "$HERMES_MCP_KEY"
		} else if opts.key, where, err = serveKey(b.a.Home); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", opts.addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: mcpserver.Handler(srv, opts.key), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
	}()
	fmt.Fprintf(opts.io.ErrOut, "serving MCP at http://%s/ (send Authorization: Bearer KEY; the key is %s)\n", ln.Addr(), where)
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// serveKey reads the key kept in the home, making it on first use.
func serveKey(home string) (key, where string, err error) {
	path := filepath.Join(home, "mcp_serve.key")
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) >= 16 {
		return strings.TrimSpace(string(b)), "in " + path, nil
	}
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return "", "", err
	}
	key = hex.EncodeToString(buf)
	if err := os.WriteFile(path, []byte(key+"\n"), 0o600); err != nil {
		return "", "", err
	}
	return key, "new, in " + path, nil
}

// backend is the mcpserver.Hermes of this home: reads from the
// projections, turns through a chatter made at the first send_message
// (reading needs no model).
type backend struct {
	g *app.Factory
	a *app.App

	mu sync.Mutex
	c  *chatter
}

func newBackend(g *app.Factory) (*backend, error) {
	a, err := g.Open()
	if err != nil {
		return nil, err
	}
	return &backend{g: g, a: a}, nil
}

func (b *backend) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.c != nil {
		b.c.Stop()
	}
	b.a.Close()
}

func (b *backend) Sessions(ctx context.Context, limit int) ([]sessions.Summary, error) {
	if err := b.a.Fresh(ctx); err != nil {
		return nil, err
	}
	return sessions.List(ctx, b.a.ProjDB.Reader(), limit)
}

func (b *backend) Session(ctx context.Context, id string) (sessions.Summary, []schema.Message, error) {
	if err := b.a.Fresh(ctx); err != nil {
		return sessions.Summary{}, nil, err
	}
	s, ok, err := sessions.Get(ctx, b.a.ProjDB.Reader(), id)
	if err != nil {
		return s, nil, err
	}
	if !ok {
		return s, nil, fmt.Errorf("no session %q (an id or a unique prefix of at least 4 characters; sessions_list shows them)", id)
	}
	msgs, err := history.Messages(ctx, b.a.ProjDB.Reader(), s.ID)
	return s, nextCall(msgs), err
}

func (b *backend) Search(ctx context.Context, q search.Query) (search.Results, error) {
	var res search.Results
	err := b.a.SearchIndex(ctx, false, nil, func(idx *search.Index) error {
		var err error
		res, err = idx.Search(ctx, q)
		return err
	})
	return res, err
}

func (b *backend) Costs(ctx context.Context, by, since string) ([]costs.Row, error) {
	if err := b.a.Fresh(ctx); err != nil {
		return nil, err
	}
	return costs.Totals(ctx, b.a.ProjDB.Reader(), by, since, knownPrices(b.a.Home).CallCost)
}

// Send runs a turn. Nobody can be asked from here: tools that need
// approval are denied unless config allows them.
func (b *backend) Send(ctx context.Context, id, text string) (mcpserver.Reply, error) {
	c, err := b.chatter()
	if err != nil {
		return mcpserver.Reply{}, err
	}
	if id == "" {
		if id, err = c.newSession(ctx, "mcp"); err != nil {
			return mcpserver.Reply{}, err
		}
	} else if id, err = c.findResumable(ctx, id, false); err != nil {
		return mcpserver.Reply{}, err
	}
	res := c.Mgr.RunTurn(ctx, id, &session.Turn{Text: text})
	if res.SessionID != "" {
		id = res.SessionID
	}
	if res.Err != nil {
		return mcpserver.Reply{}, fmt.Errorf("the turn failed in session %s: %w", id, res.Err)
	}
	return mcpserver.Reply{SessionID: id, Answer: res.Answer}, nil
}

func (b *backend) chatter() (*chatter, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.c == nil {
		c, err := newChatter(b.g, config.Overrides{}, nil)
		if err != nil {
			return nil, err
		}
		b.c = c
	}
	return b.c, nil
}
