package homeassistant

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hermes-go/hermes/schema"
)

// event is a state_changed event as the WebSocket API sends it.
type event struct {
	EventType string `json:"event_type"`
	Data      struct {
		EntityID string `json:"entity_id"`
		OldState *state `json:"old_state"`
		NewState *state `json:"new_state"`
	} `json:"data"`
	Context struct {
		ID string `json:"id"`
	} `json:"context"`
}

// state is one state of an entity.
type state struct {
	State       string         `json:"state"`
	Attributes  map[string]any `json:"attributes"`
	LastUpdated string         `json:"last_updated"`
}

// inbound turns one event into the message the agent gets, when its
// entity is watched, out of its cooldown, and its state changed.
func (a *Adapter) inbound(raw json.RawMessage, now time.Time) (schema.Inbound, bool) {
	var e event
	if err := json.Unmarshal(raw, &e); err != nil {
		a.log.Debug().Err(err).Msg("an event that is not JSON")
		return schema.Inbound{}, false
	}
	id := e.Data.EntityID
	if id == "" || (e.EventType != "" && e.EventType != "state_changed") || !a.watched(id) {
		return schema.Inbound{}, false
	}
	text := Describe(id, e.Data.OldState, e.Data.NewState)
	if text == "" {
		return schema.Inbound{}, false
	}
	a.mu.Lock()
	last, seen := a.last[id]
	if seen && now.Sub(last) < a.cfg.Cooldown {
		a.mu.Unlock()
		return schema.Inbound{}, false
	}
	a.last[id] = now
	a.mu.Unlock()
	// The entity and its state's write time name the change (one
	// service call's context can change an entity twice); the context id
	// or the time seen stand in when the server omits it.
	msgID := e.Data.NewState.LastUpdated
	if msgID == "" {
		msgID = e.Context.ID
	}
	if msgID == "" {
		msgID = fmt.Sprintf("%d", now.UnixNano())
	}
	return schema.Inbound{Kind: schema.InboundMessage, Platform: Platform, Chat: Chat, User: UserID, UserName: UserName,
		MessageID: "ha_" + id + "_" + msgID, Text: text, Verified: true}, true
}

// watched applies the filters: ignored entities never, then the watch
// lists, then WatchAll when there are none.
func (a *Adapter) watched(entity string) bool {
	if a.ignore[entity] {
		return false
	}
	if len(a.domains) > 0 || len(a.watch) > 0 {
		domain, _, _ := strings.Cut(entity, ".")
		return a.watch[entity] || a.domains[domain]
	}
	return a.cfg.WatchAll
}

// Describe is the message for a change of entity from old to new (either
// may be nil: an entity added or removed); "" when the state did not
// change or the entity was removed.
func Describe(entity string, old, new *state) string {
	if new == nil {
		return ""
	}
	was := "unknown"
	if old != nil {
		was = old.State
	}
	now := new.State
	if was == now {
		return ""
	}
	name := entity
	if n, ok := new.Attributes["friendly_name"].(string); ok && n != "" {
		name = n
	}
	attr := func(k, none string) string {
		if v, ok := new.Attributes[k]; ok && v != nil {
			return fmt.Sprint(v)
		}
		return none
	}
	onOff := func(s, on, off string) string {
		if s == "on" {
			return on
		}
		return off
	}
	domain, _, _ := strings.Cut(entity, ".")
	switch domain {
	case "climate":
		return fmt.Sprintf("[Home Assistant] %s: HVAC mode changed from '%s' to '%s' (current: %s, target: %s)",
			name, was, now, attr("current_temperature", "?"), attr("temperature", "?"))
	case "sensor":
		unit := attr("unit_of_measurement", "")
		return fmt.Sprintf("[Home Assistant] %s: changed from %s%s to %s%s", name, was, unit, now, unit)
	case "binary_sensor":
		return fmt.Sprintf("[Home Assistant] %s: %s (was %s)", name, onOff(now, "triggered", "cleared"), onOff(was, "triggered", "cleared"))
	case "light", "switch", "fan":
		return fmt.Sprintf("[Home Assistant] %s: turned %s", name, onOff(now, "on", "off"))
	case "alarm_control_panel":
		return fmt.Sprintf("[Home Assistant] %s: alarm state changed from '%s' to '%s'", name, was, now)
	}
	return fmt.Sprintf("[Home Assistant] %s (%s): changed from '%s' to '%s'", name, entity, was, now)
}
