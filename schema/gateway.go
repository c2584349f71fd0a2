package schema

import "time"

// Gateway events live in streams of their own, never in a session's: one
// stream per chat (what arrived, which session it is bound to, what was sent
// back and whether it was delivered), one index of those chats, and one
// stream of pairings. They are the gateway's memory across restarts: a
// platform message id seen twice starts no second turn, and a reply recorded
// but not delivered is sent again.

// Attachment is a file a person sent with a message, downloaded into
// $HERMES_HOME/cache/.
type Attachment struct {
	Kind     string `json:"kind"` // an Attachment… kind: photo, document, voice, audio, video
	Path     string `json:"path,omitempty"`
	Name     string `json:"name,omitempty"`
	MimeType string `json:"mime_type,omitempty"`
	Size     int64  `json:"size,omitempty"`
	// SHA256 is set on an image already kept in the home's blob store
	// (the API server's image_url parts: no file in the cache), with
	// MimeType sniffed from its bytes. Version 2 of GatewayMessageReceived.
	SHA256 string `json:"sha256,omitempty"`
}

// Kinds of Attachment.
const (
	AttachmentPhoto    = "photo"
	AttachmentDocument = "document"
	AttachmentVoice    = "voice"
	AttachmentAudio    = "audio"
	AttachmentVideo    = "video"
)

// GatewayChatOpened records, in the chat index stream, that a chat stream
// exists, so the gateway finds every chat again on start.
type GatewayChatOpened struct {
	Key      string `json:"key"`
	Stream   string `json:"stream"`
	Platform string `json:"platform"`
	Chat     string `json:"chat"`
	Thread   string `json:"thread,omitempty"`
	User     string `json:"user,omitempty"`
}

// GatewayMessageReceived is a platform message accepted for a chat. It is
// appended before the message is acknowledged on the bus.
type GatewayMessageReceived struct {
	Platform    string       `json:"platform"`
	Chat        string       `json:"chat"`
	Thread      string       `json:"thread,omitempty"`
	User        string       `json:"user"`
	UserName    string       `json:"user_name,omitempty"`
	MessageID   string       `json:"message_id"`
	Text        string       `json:"text"`
	Attachments []Attachment `json:"attachments,omitempty"`
	// SessionID is the session the message was handed to, and TurnID the
	// id its turn runs under ("" for a command the gateway answered
	// itself): after a crash they tell whether the turn ran.
	SessionID string `json:"session_id,omitempty"`
	TurnID    string `json:"turn_id,omitempty"`
}

// GatewaySessionBound records which session a chat talks to from now on.
type GatewaySessionBound struct {
	SessionID string `json:"session_id"`
	// Reason: new (first message), reset (/new or a reset policy),
	// compression (the conversation moved to a child session), resume.
	Reason string `json:"reason"`
}

// GatewayReplyRequested is the outbox: a message the gateway will send,
// recorded before it is sent.
type GatewayReplyRequested struct {
	ReplyID   string `json:"reply_id"`
	SessionID string `json:"session_id,omitempty"`
	TurnID    string `json:"turn_id,omitempty"`
	// InReplyTo is the platform message id answered.
	InReplyTo string `json:"in_reply_to,omitempty"`
	// Kind: answer, error, notice (command output, pairing), approval
	// (the Reply… constants).
	Kind string `json:"kind"`
	Text string `json:"text"`
	// Replace marks an answer that takes the place of the preview its
	// turn streamed (segment Segment of it): the platform edits that
	// message into the answer instead of sending a new one.
	Replace bool `json:"replace,omitempty"`
	Segment int  `json:"segment,omitempty"`
}

// Kinds of GatewayReplyRequested.
const (
	ReplyAnswer   = "answer"
	ReplyError    = "error"
	ReplyNotice   = "notice"
	ReplyApproval = "approval"
)

// GatewayMessageDelivered records that the platform took a reply, with the
// ids it gave the message's parts.
type GatewayMessageDelivered struct {
	ReplyID            string   `json:"reply_id"`
	PlatformMessageIDs []string `json:"platform_message_ids,omitempty"`
}

// GatewayReplyPreviewed records the platform message a streamed answer is
// being written into (segment Segment of the turn answering InReplyTo), so
// that the answer, delivered after a restart, edits it rather than leaving
// it half-written beside a new one.
type GatewayReplyPreviewed struct {
	InReplyTo          string   `json:"in_reply_to"`
	Segment            int      `json:"segment,omitempty"`
	PlatformMessageIDs []string `json:"platform_message_ids"`
}

// GatewayHomeSet makes a chat its platform's home channel (/sethome): a
// cron job delivering to the platform without naming a chat delivers
// there. The last one of a platform wins.
type GatewayHomeSet struct {
	Platform string `json:"platform"`
	Chat     string `json:"chat"`
	Thread   string `json:"thread,omitempty"`
	// User is who set it.
	User string `json:"user"`
}

// GatewayDeliveryFailed records a reply the platform refused for good.
type GatewayDeliveryFailed struct {
	ReplyID string `json:"reply_id"`
	Error   string `json:"error"`
}

// GatewayInboundRefused records a message that reached no agent: an
// unauthorised user, a bad webhook signature, a replayed delivery.
type GatewayInboundRefused struct {
	Platform  string `json:"platform"`
	Chat      string `json:"chat,omitempty"`
	User      string `json:"user,omitempty"`
	MessageID string `json:"message_id,omitempty"`
	Reason    string `json:"reason"`
}

// PairingRequested records a pairing code given to an unknown user. Only
// the code's hash is kept.
type PairingRequested struct {
	Platform  string    `json:"platform"`
	User      string    `json:"user"`
	UserName  string    `json:"user_name,omitempty"`
	Chat      string    `json:"chat,omitempty"`
	CodeHash  string    `json:"code_hash"`
	ExpiresAt time.Time `json:"expires_at"`
}

// PairingApproved lets a user in.
type PairingApproved struct {
	Platform string `json:"platform"`
	User     string `json:"user"`
	UserName string `json:"user_name,omitempty"`
	CodeHash string `json:"code_hash,omitempty"`
}

// PairingRejected records a wrong code given to `hermes pairing approve`;
// too many of them lock approvals for a while.
type PairingRejected struct {
	Reason string `json:"reason"`
}

// PairingRevoked shuts a user out again.
type PairingRevoked struct {
	Platform string `json:"platform"`
	User     string `json:"user"`
}

// APIResponseDeleted records that an API client deleted a response
// (DELETE /v1/responses/{id}): its id is unknown from then on, also as a
// previous_response_id. The turn stays in its session.
type APIResponseDeleted struct {
	ResponseID string `json:"response_id"`
}

// Event type names, as EventType returns them and envelopes carry them:
// compare with these, not with literals, so a renamed event breaks the build.
const (
	TypeGatewayChatOpened       = "GatewayChatOpened"
	TypeGatewayMessageReceived  = "GatewayMessageReceived"
	TypeGatewaySessionBound     = "GatewaySessionBound"
	TypeGatewayReplyRequested   = "GatewayReplyRequested"
	TypeGatewayMessageDelivered = "GatewayMessageDelivered"
	TypeGatewayDeliveryFailed   = "GatewayDeliveryFailed"
	TypeGatewayReplyPreviewed   = "GatewayReplyPreviewed"
	TypeGatewayHomeSet          = "GatewayHomeSet"
	TypeGatewayInboundRefused   = "GatewayInboundRefused"
	TypePairingRequested        = "PairingRequested"
	TypePairingApproved         = "PairingApproved"
	TypePairingRejected         = "PairingRejected"
	TypePairingRevoked          = "PairingRevoked"
	TypeAPIResponseDeleted      = "APIResponseDeleted"
)

func (GatewayChatOpened) EventType() string       { return TypeGatewayChatOpened }
func (GatewayMessageReceived) EventType() string  { return TypeGatewayMessageReceived }
func (GatewaySessionBound) EventType() string     { return TypeGatewaySessionBound }
func (GatewayReplyRequested) EventType() string   { return TypeGatewayReplyRequested }
func (GatewayMessageDelivered) EventType() string { return TypeGatewayMessageDelivered }
func (GatewayDeliveryFailed) EventType() string   { return TypeGatewayDeliveryFailed }
func (GatewayReplyPreviewed) EventType() string   { return TypeGatewayReplyPreviewed }
func (GatewayHomeSet) EventType() string          { return TypeGatewayHomeSet }
func (GatewayInboundRefused) EventType() string   { return TypeGatewayInboundRefused }
func (PairingRequested) EventType() string        { return TypePairingRequested }
func (PairingApproved) EventType() string         { return TypePairingApproved }
func (PairingRejected) EventType() string         { return TypePairingRejected }
func (PairingRevoked) EventType() string          { return TypePairingRevoked }
func (APIResponseDeleted) EventType() string      { return TypeAPIResponseDeleted }

// The bus messages below cross between platform adapters and the gateway
// router (possibly between processes, over NATS): they are the gateway's
// wire contract, JSON-encoded, and are not stored as they are.

// Inbound is what a platform adapter publishes on the gateway.in topic: a
// person's message, a button pressed, or the outcome of a delivery.
type Inbound struct {
	// Kind: message (default), callback (a button: Data), delivered or
	// failed (ReplyID, PlatformMessageIDs / Error), previewed (the first
	// message of a streamed answer's preview: MessageID is the message
	// answered, Segment and PlatformMessageIDs the preview's), refused (a request the
	// adapter turned away itself, such as a webhook with a bad signature:
	// Error says why; recorded in gateway-refused, no turn). The Inbound…
	// constants name them.
	Kind string `json:"kind,omitempty"`
	// Key echoes Outbound.Key on callbacks and delivery outcomes.
	Key       string `json:"key,omitempty"`
	Platform  string `json:"platform"`
	Chat      string `json:"chat"`
	ChatType  string `json:"chat_type,omitempty"` // dm (default) or group
	Thread    string `json:"thread,omitempty"`
	User      string `json:"user"`
	UserName  string `json:"user_name,omitempty"`
	MessageID string `json:"message_id,omitempty"`
	Text      string `json:"text,omitempty"`
	// Mentioned is set in groups when the bot was named or replied to.
	Mentioned   bool         `json:"mentioned,omitempty"`
	Attachments []Attachment `json:"attachments,omitempty"`
	Data        string       `json:"data,omitempty"`
	// Verified is set by front doors that authenticate the caller
	// themselves (the API server's key, a webhook's signature).
	Verified bool `json:"verified,omitempty"`
	// SessionID asks a verified front door's message to go to this
	// session (the API server's X-Hermes-Session-Id).
	SessionID string `json:"session_id,omitempty"`
	// Model overrides the model for this message (verified doors only).
	Model string `json:"model,omitempty"`
	// Stream asks for deltas of the answer (the API server's SSE).
	Stream bool `json:"stream,omitempty"`

	ReplyID            string   `json:"reply_id,omitempty"`
	PlatformMessageIDs []string `json:"platform_message_ids,omitempty"`
	Error              string   `json:"error,omitempty"`
	// Permanent marks a failure not worth retrying.
	Permanent bool `json:"permanent,omitempty"`
	// Segment is the preview's segment (previewed).
	Segment int `json:"segment,omitempty"`
}

// Kinds of Inbound message.
const (
	InboundMessage   = "message"
	InboundCallback  = "callback"
	InboundDelivered = "delivered"
	InboundFailed    = "failed"
	InboundPreviewed = "previewed"
	InboundRefused   = "refused"
)

// Outbound is what the router publishes on gateway.out.<platform>.
type Outbound struct {
	// Kind: reply (recorded in the outbox: deliver and acknowledge),
	// delta (a piece of an answer being written), preview (the whole text
	// of segment Segment of an answer being written, shown by editing one
	// message where the platform can), progress (the turn's tool-progress
	// lines so far, likewise), typing, approval
	// (Text + Choices as buttons; also recorded), notice (a reply the
	// router sends unrecorded: the pairing code for someone not yet let in).
	// The Outbound… constants
	// name them.
	Kind string `json:"kind"`
	// Key names the chat in the router; adapters echo it back.
	Key       string   `json:"key,omitempty"`
	Platform  string   `json:"platform"`
	Chat      string   `json:"chat"`
	Thread    string   `json:"thread,omitempty"`
	ReplyID   string   `json:"reply_id,omitempty"`
	InReplyTo string   `json:"in_reply_to,omitempty"`
	SessionID string   `json:"session_id,omitempty"`
	Text      string   `json:"text,omitempty"`
	Choices   []string `json:"choices,omitempty"`
	// Error is set on a reply that reports a failed turn.
	Error string `json:"error,omitempty"`
	// Usage of the turn a reply answers (the API server reports it).
	Usage *Usage `json:"usage,omitempty"`
	Model string `json:"model,omitempty"`
	// Segment numbers the previews of one turn: the text a model call
	// writes after tools ran is a new message below their progress.
	Segment int `json:"segment,omitempty"`
	// Replace, on a reply, asks that it take the place of the preview
	// (segment Segment) of its answer: the platform edits that message
	// (Edit, or the one its adapter is editing) into the answer.
	Replace bool `json:"replace,omitempty"`
	// Edit are the platform message ids of that preview as recorded (after
	// a restart the adapter no longer knows them).
	Edit []string `json:"edit,omitempty"`
}

// Kinds of Outbound message.
const (
	OutboundReply    = "reply"
	OutboundDelta    = "delta"
	OutboundPreview  = "preview"
	OutboundProgress = "progress"
	OutboundTyping   = "typing"
	OutboundApproval = "approval"
	OutboundNotice   = "notice"
)
