package schema

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Envelope is one event as it is stored: identity, correlation and the JSON
// payload of a registered type at a given version.
type Envelope struct {
	// ID is the event's own UUID.
	ID string `json:"id"`
	// Type is the registered event type name, such as "UserMessageAdded".
	Type string `json:"type"`
	// Version is the version of Type that Payload was written with.
	Version int `json:"version"`
	// SessionID is the session whose stream holds the event.
	SessionID string `json:"session_id"`
	// Time is when the event was recorded (UTC).
	Time time.Time `json:"time"`
	// TurnID correlates every event of one turn (correlation id).
	TurnID string `json:"turn_id,omitempty"`
	// CausationID is the id of the event or command that caused this one.
	CausationID string `json:"causation_id,omitempty"`
	// Payload is the JSON of the event's body, in the shape of Type@Version.
	Payload json.RawMessage `json:"payload"`
}

// Payload is implemented by every current event body.
type Payload interface {
	// EventType names the type the payload is registered under.
	EventType() string
}

// Meta carries the envelope fields a writer chooses; the rest are filled in
// by NewEnvelope.
type Meta struct {
	SessionID   string
	TurnID      string
	CausationID string
	// Time, when zero, becomes time.Now().UTC().
	Time time.Time
	// ID, when empty, becomes a new random UUID.
	ID string
}

// Chain encodes ps into envelopes with m's session, turn and time, each
// caused by the one before it (the first by m.CausationID): the events
// of one step, appended together.
func Chain(m Meta, ps ...Payload) ([]Envelope, error) {
	envs := make([]Envelope, 0, len(ps))
	for _, p := range ps {
		e, err := NewEnvelope(m, p)
		if err != nil {
			return nil, err
		}
		envs = append(envs, e)
		m.CausationID, m.ID = e.ID, ""
	}
	return envs, nil
}

// NewEnvelope encodes p at its current version into an envelope.
func NewEnvelope(m Meta, p Payload) (Envelope, error) {
	t, ok := registry[p.EventType()]
	if !ok {
		return Envelope{}, fmt.Errorf("schema: event type %q is not registered", p.EventType())
	}
	data, err := json.Marshal(p)
	if err != nil {
		return Envelope{}, fmt.Errorf("schema: encode %s: %w", p.EventType(), err)
	}
	if m.ID == "" {
		m.ID = uuid.NewString()
	}
	if m.Time.IsZero() {
		m.Time = time.Now().UTC()
	}
	return Envelope{
		ID:          m.ID,
		Type:        p.EventType(),
		Version:     t.current,
		SessionID:   m.SessionID,
		Time:        m.Time.UTC(),
		TurnID:      m.TurnID,
		CausationID: m.CausationID,
		Payload:     data,
	}, nil
}

// MustEnvelope is NewEnvelope for payloads known to encode (tests, fixtures).
func MustEnvelope(m Meta, p Payload) Envelope {
	e, err := NewEnvelope(m, p)
	if err != nil {
		panic(err)
	}
	return e
}
