package homeassistant_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors/gateway"
	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/adapters/gateway/homeassistant"
	"github.com/hermes-go/hermes/adapters/gateway/homeassistant/hatest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/schema"
)

// syncBuf is a log sink the adapter's and the gateway's goroutines share.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// hermesNotes are the notifications the adapter created, oldest first.
func hermesNotes(t *testing.T, srv *hatest.Server) []hatest.Notification {
	t.Helper()
	ns, err := srv.Notifications()
	if err != nil {
		t.Fatalf("reading the notifications back: %v", err)
	}
	var out []hatest.Notification
	for _, n := range ns {
		if n.Title == homeassistant.NotificationTitle {
			out = append(out, n)
		}
	}
	return out
}

func waitNotes(t *testing.T, srv *hatest.Server, n int) []hatest.Notification {
	t.Helper()
	var got []hatest.Notification
	gatewaytest.WaitFor(t, "the answer as a notification in Home Assistant", func() bool {
		got = hermesNotes(t, srv)
		return len(got) >= n
	})
	return got
}

// TestHomeAssistant: against a real Home Assistant, a watched entity's
// state change (an input_boolean toggled through the REST API) reaches
// the agent as a message, its answer appears as a persistent
// notification; an ignored entity and an attribute-only update start no
// turn; Home Assistant restarting mid-run is survived (the adapter
// reconnects and the next change is answered); the token appears in no
// log line and no recorded event.
func TestHomeAssistant(t *testing.T) {
	srv := hatest.Start(t)
	logs := &syncBuf{}
	log := zerolog.New(logs).Level(zerolog.DebugLevel)
	rig := gatewaytest.Start(t, gatewaytest.Options{Log: &log, Config: gateway.Config{TypingEvery: time.Hour},
		Script: []llmtest.Reply{{Content: "The porch light is on: it is after sunset, so that is expected."},
			{Content: "The porch light is off again."}}})
	ad, err := homeassistant.New(homeassistant.Config{URL: srv.URL, Token: srv.Token, WatchDomains: []string{"input_boolean"},
		IgnoreEntities: []string{hatest.Door}, MaxBackoff: time.Second, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	served := rig.Serve(ad, nil)
	gatewaytest.WaitFor(t, "the adapter to subscribe", func() bool {
		if st := served.Status(); st.LastError != "" {
			t.Logf("adapter: %s", st.LastError)
		}
		return ad.Connected()
	})

	// An ignored entity: nothing reaches the agent.
	if err := srv.Toggle(hatest.Door); err != nil {
		t.Fatal(err)
	}
	if err := srv.Toggle(hatest.PorchLight); err != nil {
		t.Fatal(err)
	}
	got := waitNotes(t, srv, 1)
	if got[0].Message != "The porch light is on: it is after sunset, so that is expected." {
		t.Fatalf("notification %+v", got[0])
	}
	reqs := rig.LLM.Requests()
	if len(reqs) != 1 || !strings.Contains(string(reqs[0].Raw), "[Home Assistant] Porch light (input_boolean.porch_light): changed from 'off' to 'on'") {
		t.Fatalf("the model saw %d calls: %s", len(reqs), reqs)
	}
	if strings.Contains(string(reqs[0].Raw), "Front door") {
		t.Fatal("the ignored entity's change reached the model")
	}
	gatewaytest.WaitFor(t, "the delivery to be recorded", func() bool {
		return gatewaytest.CountTypes(t, rig.Store, schema.TypeGatewayMessageDelivered) == 1
	})

	// Home Assistant restarts; the adapter connects again by itself and
	// the next change is answered.
	srv.Restart()
	gatewaytest.WaitFor(t, "the adapter to subscribe again", func() bool { return ad.Connections() >= 2 && ad.Connected() })
	if err := srv.Toggle(hatest.PorchLight); err != nil {
		t.Fatal(err)
	}
	// Home Assistant keeps notifications in memory: the restart dropped
	// the first.
	got = waitNotes(t, srv, 1)
	if len(got) != 1 || got[0].Message != "The porch light is off again." {
		t.Fatalf("after the restart: %+v", got)
	}
	if n := len(rig.LLM.Requests()); n != 2 {
		t.Fatalf("%d model calls, want 2", n)
	}
	if st := served.Status(); st.LastError == "" || !st.Connected {
		t.Fatalf("the status does not show the lost connection: %+v", st)
	}

	gatewaytest.WaitFor(t, "both deliveries to be recorded", func() bool {
		return gatewaytest.CountTypes(t, rig.Store, schema.TypeGatewayMessageDelivered) == 2
	})
	if strings.Contains(logs.String(), srv.Token) {
		t.Fatal("the access token is in the logs")
	}
	if !strings.Contains(logs.String(), "connection lost") {
		t.Fatalf("the lost connection is not logged:\n%s", logs.String())
	}
	if strings.Contains(gatewaytest.Payloads(t, rig.Store), srv.Token) {
		t.Fatal("the access token is in the recorded events")
	}
}

// TestSendAndRefusedToken: a reply delivered twice (a retry) is one
// notification; a long one is cut at MaxMessage characters. Home
// Assistant refusing the token is a permanent error that names HASS_TOKEN
// and not the token; a notification sent with it is refused permanently
// too.
func TestSendAndRefusedToken(t *testing.T) {
	srv := hatest.Start(t)
	good, err := homeassistant.New(homeassistant.Config{URL: srv.URL, Token: srv.Token, WatchAll: true})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("ü", homeassistant.MaxMessage+50)
	var ids []string
	for range 2 {
		got, err := good.Send(t.Context(), schema.Outbound{Kind: schema.OutboundReply, Chat: homeassistant.Chat, Text: long, ReplyID: "r-long"})
		if err != nil || len(got) != 1 {
			t.Fatalf("send: %v %v", got, err)
		}
		ids = append(ids, got[0])
	}
	notes := hermesNotes(t, srv)
	if len(notes) != 1 || ids[0] != ids[1] || notes[0].ID != ids[0] || notes[0].Message != long[:len(long)-50*len("ü")] {
		t.Fatalf("ids %v, notifications %d (first %d characters)", ids, len(notes), len([]rune(notes[0].Message)))
	}
	bad := "not-a-token-" + strings.Repeat("x", 20)
	logs := &syncBuf{}
	ad, err := homeassistant.New(homeassistant.Config{URL: srv.URL, Token: bad, WatchAll: true, Log: zerolog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = ad.Run(ctx, func(context.Context, schema.Inbound) error { return nil })
	var perm *gw.PermanentError
	if !errors.As(err, &perm) || !strings.Contains(err.Error(), "HASS_TOKEN") || strings.Contains(err.Error(), bad) {
		t.Fatalf("Run with a bad token: %v", err)
	}
	_, err = ad.Send(ctx, schema.Outbound{Kind: schema.OutboundReply, Chat: homeassistant.Chat, Text: "hello", ReplyID: "r1"})
	if !errors.As(err, &perm) || strings.Contains(err.Error(), bad) {
		t.Fatalf("Send with a bad token: %v", err)
	}
	if strings.Contains(logs.String(), bad) {
		t.Fatal("the token is in the logs")
	}
	if n := len(hermesNotes(t, srv)); n != 1 {
		t.Fatalf("%d notifications, want only the good token's", n)
	}
}
