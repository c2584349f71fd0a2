package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	gw "github.com/hermes-go/hermes/adapters/gateway"
)

// maxBody caps an Events API request.
const maxBody = 1 << 20

// Paths the Events API endpoint serves. Each takes events (JSON), slash
// commands and interactivity payloads (forms) alike, so one Request URL
// may be given to all three settings of the app.
const (
	EventsPath      = "/slack/events"
	CommandsPath    = "/slack/commands"
	InteractivePath = "/slack/interactive"
)

// serveEvents runs the Events API endpoint until ctx ends.
func (a *Adapter) serveEvents(ctx context.Context, in gw.Inbox) error {
	ln, err := net.Listen("tcp", a.cfg.EventsListen)
	if err != nil {
		return fmt.Errorf("slack events_listen %s: %w", a.cfg.EventsListen, err)
	}
	a.bound.Set(ln.Addr())
	srv := &http.Server{Handler: a.Handler(in), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	a.connected.Store(true)
	a.log.Info().Str("listen", ln.Addr().String()).Msg("events API endpoint listening")
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("slack events endpoint: %w", err)
	}
	return nil
}

// Handler is the Events API endpoint: it checks each request's signature
// (v0 HMAC-SHA256 of "v0:timestamp:body" under the signing secret, the
// timestamp within five minutes), answers url_verification, and hands
// messages, slash commands and button clicks to in, answering 200 once in
// accepted them (500 otherwise, so that Slack sends them again).
func (a *Adapter) Handler(in gw.Inbox) http.Handler {
	mux := http.NewServeMux()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { a.serveHTTP(w, r, in) })
	for _, p := range []string{EventsPath, CommandsPath, InteractivePath} {
		mux.Handle("POST "+p, h)
	}
	return mux
}

func (a *Adapter) serveHTTP(w http.ResponseWriter, r *http.Request, in gw.Inbox) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		http.Error(w, "request body too large or unreadable", http.StatusRequestEntityTooLarge)
		return
	}
	if err := a.verify(r.Header, body); err != nil {
		a.log.Warn().Err(err).Str("remote", r.RemoteAddr).Msg("a request without a valid Slack signature: refused")
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	ctx := r.Context()
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		a.serveForm(ctx, w, body, in)
		return
	}
	ev, err := slackevents.ParseEvent(json.RawMessage(body), slackevents.OptionNoVerifyToken())
	if err != nil {
		var outer struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(body, &outer) == nil && outer.Type == slackevents.CallbackEvent {
			// An event type this build does not know: not for us. A 200,
			// or Slack sends it again (and in time turns the
			// subscription off).
			w.WriteHeader(http.StatusOK)
			return
		}
		http.Error(w, "not a Slack event", http.StatusBadRequest)
		return
	}
	switch ev.Type {
	case slackevents.URLVerification:
		var c slackevents.ChallengeResponse
		if err := json.Unmarshal(body, &c); err != nil {
			http.Error(w, "bad url_verification", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, c.Challenge)
		return
	case slackevents.CallbackEvent:
		if m, ok := a.event(r.Context(), ev.InnerEvent.Data); ok {
			if err := in(ctx, m); err != nil {
				a.log.Warn().Err(err).Str("message_id", m.MessageID).Msg("event not accepted yet: Slack will send it again")
				http.Error(w, "not accepted: try again", http.StatusInternalServerError)
				return
			}
		}
	}
	w.WriteHeader(http.StatusOK)
}

// serveForm handles a slash command or an interactivity payload.
func (a *Adapter) serveForm(ctx context.Context, w http.ResponseWriter, body []byte, in gw.Inbox) {
	vals, err := url.ParseQuery(string(body))
	if err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	if p := vals.Get("payload"); p != "" {
		var cb slack.InteractionCallback
		if err := json.Unmarshal([]byte(p), &cb); err != nil {
			http.Error(w, "bad interactivity payload", http.StatusBadRequest)
			return
		}
		if m, ok := a.interaction(cb); ok {
			if err := in(ctx, m); err != nil {
				http.Error(w, "not accepted: try again", http.StatusInternalServerError)
				return
			}
		}
		w.WriteHeader(http.StatusOK)
		return
	}
	if vals.Get("command") == "" {
		http.Error(w, "neither an event, a command nor an interaction", http.StatusBadRequest)
		return
	}
	c := slack.SlashCommand{Command: vals.Get("command"), Text: vals.Get("text"), TeamID: vals.Get("team_id"),
		ChannelID: vals.Get("channel_id"), ChannelName: vals.Get("channel_name"), UserID: vals.Get("user_id"),
		UserName: vals.Get("user_name"), TriggerID: vals.Get("trigger_id"), ResponseURL: vals.Get("response_url")}
	m, ok, reply := a.slash(c)
	if ok {
		if err := in(ctx, m); err != nil {
			http.Error(w, "not accepted: try again", http.StatusInternalServerError)
			return
		}
	}
	if reply == "" {
		w.WriteHeader(http.StatusOK)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"response_type": "ephemeral", "text": reply})
}

// verify checks Slack's request signature with the library's verifier.
func (a *Adapter) verify(h http.Header, body []byte) error {
	sv, err := slack.NewSecretsVerifier(h, a.cfg.SigningSecret)
	if err != nil {
		if errors.Is(err, slack.ErrExpiredTimestamp) {
			return errors.New("the request's timestamp is more than five minutes off")
		}
		return errors.New("missing or malformed Slack signature headers")
	}
	if _, err := sv.Write(body); err != nil {
		return err
	}
	if err := sv.Ensure(); err != nil {
		return errors.New("the Slack signature does not match")
	}
	return nil
}
