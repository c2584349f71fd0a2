package schema

import (
	"encoding/json"
	"fmt"
	"sort"
	"unicode/utf8"

	jsoniter "github.com/json-iterator/go"
)

// fastJSON decodes payloads with the standard library's semantics at about
// four times its speed; replaying a long log is mostly payload decoding.
var fastJSON = jsoniter.ConfigCompatibleWithStandardLibrary

// UnknownTypeError is returned for an event whose type or version this build
// does not know. It is never skipped silently: a reader that meets one stops
// and says where.
type UnknownTypeError struct {
	Type    string
	Version int
}

func (e *UnknownTypeError) Error() string {
	return fmt.Sprintf("unknown event type %s v%d", e.Type, e.Version)
}

// eventType describes one registered type: its current version, how to
// decode the current shape, and the upcasters from each older version to the
// next one.
type eventType struct {
	current int
	decode  func([]byte) (Payload, error)
	// up[v] turns the JSON of version v into the JSON of version v+1.
	up map[int]func([]byte) ([]byte, error)
}

func decoder[T Payload]() func([]byte) (Payload, error) {
	return func(b []byte) (Payload, error) {
		// The standard library has the last word where the fast decoder
		// differs (both found by FuzzDecode): it keeps invalid UTF-8 as it
		// is where the standard library reads U+FFFD, and it refuses
		// numbers beyond float64's range in fields no type has, which the
		// standard library skips. Both are rare enough for the slow path.
		var p T
		if utf8.Valid(b) && fastJSON.Unmarshal(b, &p) == nil {
			return p, nil
		}
		var q T
		if err := json.Unmarshal(b, &q); err != nil {
			return nil, err
		}
		return q, nil
	}
}

func v1[T Payload]() eventType { return eventType{current: 1, decode: decoder[T]()} }

// registry is fixed at build time and never written afterwards.
var registry = map[string]eventType{
	"SessionStarted":    v1[SessionStarted](),
	"SystemPromptBuilt": v1[SystemPromptBuilt](),
	"UserMessageAdded":  v1[UserMessageAdded](),
	"AssistantMessageAdded": {
		current: 2,
		decode:  decoder[AssistantMessageAdded](),
		up:      map[int]func([]byte) ([]byte, error){1: upAssistantV1},
	},
	"ToolCallStarted": {
		current: 2,
		decode:  decoder[ToolCallStarted](),
		up:      map[int]func([]byte) ([]byte, error){1: same},
	},
	"ToolResultAdded":        v1[ToolResultAdded](),
	"TurnCompleted":          v1[TurnCompleted](),
	"TurnInterrupted":        v1[TurnInterrupted](),
	"ProviderFallback":       v1[ProviderFallback](),
	"BudgetWarning":          v1[BudgetWarning](),
	"ContextCompressed":      v1[ContextCompressed](),
	"SubagentSpawned":        v1[SubagentSpawned](),
	"SubagentFinished":       v1[SubagentFinished](),
	"MemoryUpdated":          v1[MemoryUpdated](),
	"SkillWritten":           v1[SkillWritten](),
	"SessionTitled":          v1[SessionTitled](),
	"SessionEnded":           v1[SessionEnded](),
	"TodoUpdated":            v1[TodoUpdated](),
	"ApprovalDecided":        v1[ApprovalDecided](),
	"ApprovalGranted":        v1[ApprovalGranted](),
	"ApprovalRevoked":        v1[ApprovalRevoked](),
	"AuxiliaryCallCompleted": v1[AuxiliaryCallCompleted](),
	"HookRan":                v1[HookRan](),

	"GatewayChatOpened":       v1[GatewayChatOpened](),
	"GatewayMessageReceived":  v1[GatewayMessageReceived](),
	"GatewaySessionBound":     v1[GatewaySessionBound](),
	"GatewayReplyRequested":   v1[GatewayReplyRequested](),
	"GatewayMessageDelivered": v1[GatewayMessageDelivered](),
	"GatewayDeliveryFailed":   v1[GatewayDeliveryFailed](),
	"GatewayInboundRefused":   v1[GatewayInboundRefused](),
	"PairingRequested":        v1[PairingRequested](),
	"PairingApproved":         v1[PairingApproved](),
	"PairingRejected":         v1[PairingRejected](),
	"PairingRevoked":          v1[PairingRevoked](),

	"JobCreated":        v1[JobCreated](),
	"JobListed":         v1[JobListed](),
	"JobUpdated":        v1[JobUpdated](),
	"JobPaused":         v1[JobPaused](),
	"JobResumed":        v1[JobResumed](),
	"JobRemoved":        v1[JobRemoved](),
	"JobRunStarted":     v1[JobRunStarted](),
	"JobRunFinished":    v1[JobRunFinished](),
	"JobRunMissed":      v1[JobRunMissed](),
	"JobDelivered":      v1[JobDelivered](),
	"JobDeliveryFailed": v1[JobDeliveryFailed](),
}

// same upcasts a version whose JSON the next one reads as it is (the next
// only added optional fields).
func same(b []byte) ([]byte, error) { return b, nil }

func upAssistantV1(b []byte) ([]byte, error) {
	var old assistantMessageAddedV1
	if err := json.Unmarshal(b, &old); err != nil {
		return nil, err
	}
	return json.Marshal(AssistantMessageAdded{
		Content:      old.Content,
		ToolCalls:    old.ToolCalls,
		FinishReason: old.FinishReason,
		Model:        old.Model,
		Usage:        Usage{PromptTokens: old.PromptTokens, CompletionTokens: old.CompletionTokens},
	})
}

// Check reports an *UnknownTypeError when e's type or version is not one
// this build can decode, without decoding the payload.
func Check(e Envelope) error {
	t, ok := registry[e.Type]
	if !ok || e.Version < 1 || e.Version > t.current {
		return &UnknownTypeError{Type: e.Type, Version: e.Version}
	}
	return nil
}

// Decode returns the payload of e in its current shape, upcasting older
// versions step by step.
func Decode(e Envelope) (Payload, error) {
	if err := Check(e); err != nil {
		return nil, err
	}
	t := registry[e.Type]
	data := []byte(e.Payload)
	for v := e.Version; v < t.current; v++ {
		up, ok := t.up[v]
		if !ok {
			return nil, &UnknownTypeError{Type: e.Type, Version: e.Version}
		}
		var err error
		if data, err = up(data); err != nil {
			return nil, fmt.Errorf("upcast %s v%d: %w", e.Type, v, err)
		}
	}
	p, err := t.decode(data)
	if err != nil {
		return nil, fmt.Errorf("decode %s v%d: %w", e.Type, e.Version, err)
	}
	return p, nil
}

// TypeVersion names one version of one event type.
type TypeVersion struct {
	Type    string
	Version int
}

// Known lists every decodable type and version, sorted.
func Known() []TypeVersion {
	var out []TypeVersion
	for name, t := range registry {
		for v := 1; v <= t.current; v++ {
			out = append(out, TypeVersion{name, v})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Type != out[j].Type {
			return out[i].Type < out[j].Type
		}
		return out[i].Version < out[j].Version
	})
	return out
}

// CurrentVersion is the version new events of typ are written with.
func CurrentVersion(typ string) (int, bool) {
	t, ok := registry[typ]
	return t.current, ok
}
