package telegram

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/mymmrac/telego"

	gw "github.com/hermes-go/hermes/adapters/gateway"
)

// maxUpdate bounds a webhook request's body; updates are small.
const maxUpdate = 1 << 20

// runWebhook serves the webhook and registers it with Telegram until ctx
// ends. The webhook stays registered when the gateway stops: Telegram
// keeps the updates that arrive meanwhile and delivers them once the
// listener answers again.
func (a *Adapter) runWebhook(ctx context.Context, in gw.Inbox) error {
	u, _ := url.Parse(a.cfg.WebhookURL) // checked by New
	route := u.Path
	if route == "" {
		route = "/"
	}
	ln, err := net.Listen("tcp", a.cfg.WebhookListen)
	if err != nil {
		return fmt.Errorf("telegram webhook: listen on %s: %w", a.cfg.WebhookListen, err)
	}
	a.bound.Set(ln.Addr())
	mux := http.NewServeMux()
	mux.Handle(route, a.webhook(in))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()

	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	// One connection at a time: Telegram then posts a chat's updates in
	// order, as getUpdates would return them.
	err = a.bot.SetWebhook(cctx, &telego.SetWebhookParams{URL: a.cfg.WebhookURL, SecretToken: a.secret,
		MaxConnections: 1, AllowedUpdates: allowedUpdates})
	cancel()
	if err != nil {
		a.connected.Store(false)
		if ctx.Err() != nil {
			return nil
		}
		err = a.classify(err)
		var perm *gw.PermanentError
		if errors.As(err, &perm) {
			return &gw.PermanentError{Err: fmt.Errorf("telegram setWebhook %s: %w", a.cfg.WebhookURL, err)}
		}
		return fmt.Errorf("telegram setWebhook: %w", err)
	}
	a.connected.Store(true)
	a.log.Info().Str("url", a.cfg.WebhookURL).Str("listen", ln.Addr().String()).Msg("webhook registered")
	select {
	case <-ctx.Done():
		return nil
	case err := <-served:
		a.connected.Store(false)
		return fmt.Errorf("telegram webhook listener: %w", err)
	}
}

// webhook is the handler Telegram posts updates to. It answers 200 once
// the update is handed over (or is not for us), 500 when it could not be,
// so that Telegram delivers it again, and 401 to a caller without the
// secret.
func (a *Adapter) webhook(in gw.Inbox) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		if subtle.ConstantTimeCompare([]byte(r.Header.Get(SecretHeader)), []byte(a.secret)) != 1 {
			a.log.Warn().Str("remote", r.RemoteAddr).Msg("webhook call without the secret token: refused")
			http.Error(w, "bad secret token", http.StatusUnauthorized)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxUpdate))
		if err != nil {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		var u telego.Update
		if err := json.Unmarshal(body, &u); err != nil {
			a.log.Warn().Err(err).Msg("webhook: not an update")
			http.Error(w, "not a Telegram update", http.StatusBadRequest)
			return
		}
		if err := a.handle(r.Context(), u, in); err != nil {
			a.log.Warn().Err(err).Int("update", u.UpdateID).Msg("update not accepted yet: Telegram will deliver it again")
			http.Error(w, "not accepted yet", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
}
