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
	// SessionStarted v2 and UserMessageAdded v2 added Images (to the
	// history's messages and to the user's message).
	TypeSessionStarted: {
		current: 2,
		decode:  decoder[SessionStarted](),
		up:      map[int]func([]byte) ([]byte, error){1: same},
	},
	TypeSystemPromptBuilt: v1[SystemPromptBuilt](),
	TypeUserMessageAdded: {
		current: 2,
		decode:  decoder[UserMessageAdded](),
		up:      map[int]func([]byte) ([]byte, error){1: same},
	},
	TypeAssistantMessageAdded: {
		current: 2,
		decode:  decoder[AssistantMessageAdded](),
		up:      map[int]func([]byte) ([]byte, error){1: upAssistantV1},
	},
	TypeToolCallStarted: {
		current: 2,
		decode:  decoder[ToolCallStarted](),
		up:      map[int]func([]byte) ([]byte, error){1: same},
	},
	TypeToolResultAdded:        v1[ToolResultAdded](),
	TypeTurnCompleted:          v1[TurnCompleted](),
	TypeTurnInterrupted:        v1[TurnInterrupted](),
	TypeTurnSteered:            v1[TurnSteered](),
	TypeProviderFallback:       v1[ProviderFallback](),
	TypeBudgetWarning:          v1[BudgetWarning](),
	TypeContextCompressed:      v1[ContextCompressed](),
	TypeSubagentSpawned:        v1[SubagentSpawned](),
	TypeSubagentFinished:       v1[SubagentFinished](),
	TypeMemoryUpdated:          v1[MemoryUpdated](),
	TypeMemoryWriteStaged:      v1[MemoryWriteStaged](),
	TypeMemoryWriteDecided:     v1[MemoryWriteDecided](),
	TypeSessionTitled:          v1[SessionTitled](),
	TypeSessionEnded:           v1[SessionEnded](),
	TypeTodoUpdated:            v1[TodoUpdated](),
	TypeApprovalDecided:        v1[ApprovalDecided](),
	TypeApprovalGranted:        v1[ApprovalGranted](),
	TypeApprovalRevoked:        v1[ApprovalRevoked](),
	TypeAuxiliaryCallCompleted: v1[AuxiliaryCallCompleted](),
	TypeHookRan:                v1[HookRan](),

	TypePluginInstalled: v1[PluginInstalled](),
	TypePluginUpdated:   v1[PluginUpdated](),
	TypePluginRemoved:   v1[PluginRemoved](),
	TypePluginEnabled:   v1[PluginEnabled](),
	TypePluginDisabled:  v1[PluginDisabled](),

	TypeGatewayChatOpened: v1[GatewayChatOpened](),
	// v2: an attachment may name a blob (Attachment.SHA256).
	TypeGatewayMessageReceived: {
		current: 2,
		decode:  decoder[GatewayMessageReceived](),
		up:      map[int]func([]byte) ([]byte, error){1: same},
	},
	TypeGatewaySessionBound:     v1[GatewaySessionBound](),
	TypeGatewayReplyRequested:   v1[GatewayReplyRequested](),
	TypeGatewayMessageDelivered: v1[GatewayMessageDelivered](),
	TypeGatewayDeliveryFailed:   v1[GatewayDeliveryFailed](),
	TypeGatewayReplyPreviewed:   v1[GatewayReplyPreviewed](),
	TypeGatewayHomeSet:          v1[GatewayHomeSet](),
	TypeGatewayInboundRefused:   v1[GatewayInboundRefused](),
	TypePairingRequested:        v1[PairingRequested](),
	TypePairingApproved:         v1[PairingApproved](),
	TypePairingRejected:         v1[PairingRejected](),
	TypePairingRevoked:          v1[PairingRevoked](),
	TypeAPIResponseDeleted:      v1[APIResponseDeleted](),

	TypeJobCreated:        v1[JobCreated](),
	TypeJobListed:         v1[JobListed](),
	TypeJobUpdated:        v1[JobUpdated](),
	TypeJobPaused:         v1[JobPaused](),
	TypeJobResumed:        v1[JobResumed](),
	TypeJobRemoved:        v1[JobRemoved](),
	TypeJobRunStarted:     v1[JobRunStarted](),
	TypeJobRunFinished:    v1[JobRunFinished](),
	TypeJobRunMissed:      v1[JobRunMissed](),
	TypeJobDelivered:      v1[JobDelivered](),
	TypeJobDeliveryFailed: v1[JobDeliveryFailed](),

	TypeSkillWritten: {
		current: 2,
		decode:  decoder[SkillWritten](),
		up:      map[int]func([]byte) ([]byte, error){1: same},
	},
	TypeSkillPatched:  v1[SkillPatched](),
	TypeSkillArchived: v1[SkillArchived](),
	TypeSkillRestored: v1[SkillRestored](),

	TypeReviewSpawned:  v1[ReviewSpawned](),
	TypeReviewStarted:  v1[ReviewStarted](),
	TypeReviewFinished: v1[ReviewFinished](),
	TypeReviewUndone:   v1[ReviewUndone](),
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
