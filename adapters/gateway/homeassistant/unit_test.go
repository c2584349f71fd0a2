package homeassistant

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/schema"
)

// change is a state_changed event as Home Assistant sends it.
func change(entity, from, to string, attrs map[string]any, ctxID string) json.RawMessage {
	e := map[string]any{"event_type": "state_changed", "context": map[string]any{"id": ctxID},
		"data": map[string]any{"entity_id": entity,
			"old_state": map[string]any{"state": from, "attributes": attrs},
			"new_state": map[string]any{"state": to, "attributes": attrs, "last_updated": "2026-11-28T01:00:00." + ctxID}}}
	b, _ := json.Marshal(e)
	return b
}

func mustNew(t *testing.T, cfg Config) *Adapter {
	t.Helper()
	cfg.Token = "t0k3n"
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestNewRefuses(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{URL: "http://ha:8123"}, "HASS_TOKEN"},
		{Config{Token: "x", URL: "ftp://ha"}, "HASS_URL"},
		{Config{Token: "x", URL: "ha.local:8123"}, "HASS_URL"},
	} {
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v): %v, want an error naming %s", c.cfg, err, c.want)
		}
	}
	a := mustNew(t, Config{URL: "https://ha.example.org/base/"})
	if a.wsURL != "wss://ha.example.org/base/api/websocket" || a.base.String() != "https://ha.example.org/base" {
		t.Fatalf("urls %q %q", a.wsURL, a.base)
	}
	if a := mustNew(t, Config{}); a.wsURL != "ws://homeassistant.local:8123/api/websocket" {
		t.Fatalf("default url %q", a.wsURL)
	}
}

// The filters as the Python agent's: closed without any, the watch lists
// or watch_all, the ignore list over both.
func TestFilters(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		take map[string]bool
	}{
		{"none configured: nothing", Config{}, map[string]bool{"light.kitchen": false, "sensor.t": false}},
		{"watch_all", Config{WatchAll: true, IgnoreEntities: []string{"sensor.noisy"}},
			map[string]bool{"light.kitchen": true, "sensor.t": true, "sensor.noisy": false}},
		{"domains", Config{WatchDomains: []string{"light"}}, map[string]bool{"light.kitchen": true, "switch.fan": false}},
		{"entities and domains", Config{WatchDomains: []string{"light"}, WatchEntities: []string{"switch.fan"}, WatchAll: true},
			map[string]bool{"light.kitchen": true, "switch.fan": true, "switch.other": false}},
		{"ignore wins", Config{WatchEntities: []string{"light.kitchen"}, IgnoreEntities: []string{"light.kitchen"}},
			map[string]bool{"light.kitchen": false}},
	}
	for _, c := range cases {
		a := mustNew(t, c.cfg)
		for entity, want := range c.take {
			_, ok := a.inbound(change(entity, "off", "on", nil, "c-"+entity), time.Now())
			if ok != want {
				t.Errorf("%s: %s taken=%v, want %v", c.name, entity, ok, want)
			}
		}
	}
}

func TestCooldownAndNoChange(t *testing.T) {
	a := mustNew(t, Config{WatchAll: true, Cooldown: 30 * time.Second})
	t0 := time.Now()
	in, ok := a.inbound(change("light.porch", "off", "on", map[string]any{"friendly_name": "Porch"}, "01HX"), t0)
	if !ok || in.Chat != Chat || in.User != UserID || in.UserName != UserName || !in.Verified ||
		in.MessageID != "ha_light.porch_2026-11-28T01:00:00.01HX" || in.Text != "[Home Assistant] Porch: turned on" || in.Kind != schema.InboundMessage {
		t.Fatalf("message %+v %v", in, ok)
	}
	if _, ok := a.inbound(change("light.porch", "on", "off", nil, "01HY"), t0.Add(10*time.Second)); ok {
		t.Fatal("a change within the cooldown was taken")
	}
	if _, ok := a.inbound(change("light.hall", "on", "off", nil, "01HZ"), t0.Add(10*time.Second)); !ok {
		t.Fatal("the cooldown is per entity")
	}
	if _, ok := a.inbound(change("light.porch", "on", "off", nil, "01J0"), t0.Add(31*time.Second)); !ok {
		t.Fatal("a change after the cooldown was dropped")
	}
	// An attribute update (same state) and a removed entity start nothing,
	// and do not start the cooldown.
	b := mustNew(t, Config{WatchAll: true, Cooldown: time.Hour})
	if _, ok := b.inbound(change("sensor.t", "20", "20", nil, "x"), t0); ok {
		t.Fatal("an attribute update was taken")
	}
	removed, _ := json.Marshal(map[string]any{"event_type": "state_changed", "data": map[string]any{"entity_id": "sensor.t",
		"old_state": map[string]any{"state": "20"}, "new_state": nil}})
	if _, ok := b.inbound(removed, t0); ok {
		t.Fatal("a removed entity was taken")
	}
	if _, ok := b.inbound(change("sensor.t", "20", "21", nil, "y"), t0); !ok {
		t.Fatal("the first real change was dropped")
	}
	if _, ok := b.inbound(json.RawMessage(`{"event_type":`), t0); ok {
		t.Fatal("broken JSON was taken")
	}
}

func TestDescribe(t *testing.T) {
	st := func(s string, attrs map[string]any) *state { return &state{State: s, Attributes: attrs} }
	for _, c := range []struct {
		entity   string
		old, new *state
		want     string
	}{
		{"climate.lounge", st("off", nil), st("heat", map[string]any{"friendly_name": "Lounge", "current_temperature": 19.5, "temperature": 21}),
			"[Home Assistant] Lounge: HVAC mode changed from 'off' to 'heat' (current: 19.5, target: 21)"},
		{"climate.x", st("off", nil), st("cool", nil), "[Home Assistant] climate.x: HVAC mode changed from 'off' to 'cool' (current: ?, target: ?)"},
		{"sensor.t", st("20.5", nil), st("21", map[string]any{"unit_of_measurement": "°C", "friendly_name": "Temp"}),
			"[Home Assistant] Temp: changed from 20.5°C to 21°C"},
		{"binary_sensor.door", st("off", nil), st("on", nil), "[Home Assistant] binary_sensor.door: triggered (was cleared)"},
		{"binary_sensor.door", st("on", nil), st("off", nil), "[Home Assistant] binary_sensor.door: cleared (was triggered)"},
		{"switch.fan", st("on", nil), st("off", nil), "[Home Assistant] switch.fan: turned off"},
		{"fan.x", nil, st("on", nil), "[Home Assistant] fan.x: turned on"},
		{"alarm_control_panel.home", st("disarmed", nil), st("armed_away", nil),
			"[Home Assistant] alarm_control_panel.home: alarm state changed from 'disarmed' to 'armed_away'"},
		{"input_text.note", nil, st("hello", map[string]any{"friendly_name": "Note"}),
			"[Home Assistant] Note (input_text.note): changed from 'unknown' to 'hello'"},
		{"light.x", st("on", nil), st("on", nil), ""},
		{"light.x", st("on", nil), nil, ""},
	} {
		if got := Describe(c.entity, c.old, c.new); got != c.want {
			t.Errorf("Describe(%s):\n got %q\nwant %q", c.entity, got, c.want)
		}
	}
}

// Kinds Home Assistant has no use for are dropped without a call; an
// unknown kind and an empty text are refused without one.
func TestSendWithoutCall(t *testing.T) {
	a := mustNew(t, Config{URL: "http://127.0.0.1:1"}) // nothing listens there
	for _, k := range []string{schema.OutboundTyping, schema.OutboundDelta} {
		if ids, err := a.Send(t.Context(), schema.Outbound{Kind: k, Text: "x"}); err != nil || ids != nil {
			t.Errorf("%s: %v %v", k, ids, err)
		}
	}
	for _, out := range []schema.Outbound{{Kind: "bogus", Text: "x"}, {Kind: schema.OutboundReply, Text: "  "}} {
		if _, err := a.Send(t.Context(), out); err == nil || strings.Contains(err.Error(), "connection refused") {
			t.Errorf("%+v: %v", out, err)
		}
	}
	if _, err := a.Send(t.Context(), schema.Outbound{Kind: schema.OutboundReply, Text: "hi"}); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("unreachable server: %v", err)
	}
}

// Run against a server that is not there gives up after three attempts
// with an error the gateway retries (not a permanent one), and says so in
// LastError.
func TestRunUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	a := mustNew(t, Config{URL: "http://" + addr, WatchAll: true, MaxBackoff: 100 * time.Millisecond})
	err = a.Run(t.Context(), func(context.Context, schema.Inbound) error { return nil })
	var perm *gw.PermanentError
	if err == nil || errors.As(err, &perm) || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("Run: %v", err)
	}
	if msg, at := a.LastError(); !strings.Contains(msg, "connection refused") || at.IsZero() || a.Connected() {
		t.Fatalf("LastError %q %v", msg, at)
	}
}

// How REST failures are sorted (a plain HTTP server stands in for the
// status codes Home Assistant rarely gives; the real server's answers are
// in the end-to-end tests): 429 waits for Retry-After, 401 is permanent
// and names HASS_TOKEN, 500 is retried.
func TestSendFailures(t *testing.T) {
	var status atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer t0k3n" || r.URL.Path != "/api/services/persistent_notification/create" {
			w.WriteHeader(http.StatusTeapot)
			return
		}
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(int(status.Load()))
	}))
	defer srv.Close()
	a := mustNew(t, Config{URL: srv.URL})
	send := func(code int) error {
		status.Store(int64(code))
		_, err := a.Send(t.Context(), schema.Outbound{Kind: schema.OutboundReply, Text: "hi", ReplyID: "r"})
		return err
	}
	var ra *gw.RetryAfterError
	if err := send(429); !errors.As(err, &ra) || ra.After != 7*time.Second {
		t.Errorf("429: %v", err)
	}
	var perm *gw.PermanentError
	if err := send(401); !errors.As(err, &perm) || !strings.Contains(err.Error(), "HASS_TOKEN") || strings.Contains(err.Error(), "t0k3n") {
		t.Errorf("401: %v", err)
	}
	if err := send(500); err == nil || errors.As(err, &perm) || errors.As(err, &ra) {
		t.Errorf("500: %v", err)
	}
	if err := send(200); err != nil {
		t.Errorf("200: %v", err)
	}
}
