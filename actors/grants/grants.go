// Package grants owns the person's standing approvals: the judge's rules of
// dangerous commands (and the MCP tools) a person answered "always" to,
// kept as events in the grants stream of the event store rather than in a
// file a model could write. A List folds the stream and is the allow-list
// the terminal's and MCP's approvers ask; config.yaml's command_allowlist
// still counts, read-only: Hermes never writes it.
//
// A rule is granted by its ID (judge.Rule.ID). Grants recorded before IDs,
// and command_allowlist entries written by hand or by Python Hermes, name
// rules by description: judge.Key resolves every pattern the list reads or
// is asked about, so those keep allowing what they allowed.
package grants

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors/judge"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// Stream holds every grant and revocation, in order.
const Stream = "grants"

// Who grants or revokes (ApprovalGranted.By, ApprovalRevoked.By).
const (
	// ByUser is a person answering a question in a session.
	ByUser = "user"
	// ByCLI is a person at the command line (hermes approvals).
	ByCLI = "cli"
)

// maxAttempts bounds the appends that lose a race with another writer of
// the stream; each lost race means another grant landed.
const maxAttempts = 20

// readTimeout bounds the read behind Has, which has no context of its own.
const readTimeout = 5 * time.Second

// Grant is one standing approval as the stream has it.
type Grant struct {
	// Pattern is what is allowed: a rule's ID (judge.Key of what was
	// granted) or an MCP tool pattern.
	Pattern string
	By      string
	Session string
	Command string
	At      time.Time
}

// List is the allow-list of a home: config's command_allowlist and the
// grants of the store. Every question reads what was appended since the
// last one (a short read of one stream), so a grant or a revocation made by
// another process counts at the next command.
type List struct {
	store      events.Store
	config     []string
	configKeys map[string]bool // judge.Key of each config entry
	log        zerolog.Logger

	mu       sync.Mutex
	granted  map[string]Grant
	revision uint64
	exists   bool
}

// New returns the allow-list of store's grants and config's
// command_allowlist entries. A nil store (a registry only listed, never
// run) has config's entries only and cannot grant.
func New(store events.Store, config []string, log zerolog.Logger) *List {
	keys := make(map[string]bool, len(config))
	for _, c := range config {
		keys[judge.Key(c)] = true
	}
	return &List{store: store, config: slices.Clone(config), configKeys: keys, log: log, granted: map[string]Grant{}}
}

// Has reports whether commands flagged with pattern (a rule's ID,
// description or alias, or an MCP tool) may run without a question. When
// the grants cannot be read it answers from config alone: the person is
// asked rather than a revoked grant honoured.
func (l *List) Has(pattern string) bool {
	pattern = judge.Key(pattern)
	if l.configKeys[pattern] {
		return true
	}
	if l.store == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.refresh(ctx); err != nil {
		l.log.Warn().Err(err).Str("pattern", pattern).Msg("grants unreadable: asking instead")
		return false
	}
	_, ok := l.granted[pattern]
	return ok
}

// Add grants pattern for good, by a person answering a question (the
// allow-list interface of the terminal and MCP approvers).
func (l *List) Add(pattern string) error {
	return l.Put(context.Background(), Grant{Pattern: pattern, By: ByUser})
}

// Grant is Add with what the person was asked: the session and the
// command.
func (l *List) Grant(ctx context.Context, pattern, session, command string) error {
	return l.Put(ctx, Grant{Pattern: pattern, By: ByUser, Session: session, Command: command})
}

// Put appends g to the stream unless its pattern is granted already. A
// rule is recorded by its ID, whichever of its names g gives. It appends
// at the revision it has read, so two processes granting at once both
// land: the one that loses the race reads the other's grant and tries
// again.
func (l *List) Put(ctx context.Context, g Grant) error {
	if g.Pattern == "" {
		return errors.New("grant of an empty pattern")
	}
	g.Pattern = judge.Key(g.Pattern)
	return l.appendIf(ctx, func() (schema.Payload, error) {
		if _, ok := l.granted[g.Pattern]; ok {
			return nil, nil
		}
		return schema.ApprovalGranted{Pattern: g.Pattern, By: g.By, Session: g.Session, Command: g.Command}, nil
	})
}

// Revoke takes the grant of pattern (a rule by any of its names, or an MCP
// tool) back. A pattern that is only in config.yaml is the file's to
// change.
func (l *List) Revoke(ctx context.Context, pattern, by, reason string) error {
	pattern = judge.Key(pattern)
	return l.appendIf(ctx, func() (schema.Payload, error) {
		if _, ok := l.granted[pattern]; ok {
			return schema.ApprovalRevoked{Pattern: pattern, By: by, Reason: reason}, nil
		}
		if l.configKeys[pattern] {
			return nil, fmt.Errorf("%q is not a grant but an entry of command_allowlist in config.yaml: remove it there", pattern)
		}
		return nil, fmt.Errorf("no grant %q (hermes approvals list shows them)", pattern)
	})
}

// appendIf reads the stream to its end, asks next what to append (nil:
// nothing) and appends it at the revision read, again after a lost race.
func (l *List) appendIf(ctx context.Context, next func() (schema.Payload, error)) error {
	if l.store == nil {
		return errors.New("grants need the event store, and none is open")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for attempt := 1; ; attempt++ {
		if err := l.refresh(ctx); err != nil {
			return err
		}
		p, err := next()
		if err != nil || p == nil {
			return err
		}
		env, err := schema.NewEnvelope(schema.Meta{}, p)
		if err != nil {
			return err
		}
		expected := events.NoStream
		if l.exists {
			expected = events.Exact(l.revision)
		}
		res, err := l.store.Append(ctx, Stream, expected, env)
		var wrong *events.WrongExpectedVersionError
		if errors.As(err, &wrong) && attempt < maxAttempts && ctx.Err() == nil {
			continue
		}
		if err != nil {
			return fmt.Errorf("record %s: %w", p.EventType(), err)
		}
		l.apply(p, env.Time)
		l.revision, l.exists = res.NextRevision, true
		return nil
	}
}

// Grants returns the grants in force, sorted by pattern.
func (l *List) Grants(ctx context.Context) ([]Grant, error) {
	if l.store == nil {
		return nil, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.refresh(ctx); err != nil {
		return nil, err
	}
	out := make([]Grant, 0, len(l.granted))
	for _, g := range l.granted {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pattern < out[j].Pattern })
	return out, nil
}

// Config returns config.yaml's command_allowlist entries.
func (l *List) Config() []string { return slices.Clone(l.config) }

// refresh applies the events appended since the last read. l.mu is held.
func (l *List) refresh(ctx context.Context) error {
	from := uint64(0)
	if l.exists {
		from = l.revision + 1
	}
	rs, err := l.store.ReadStream(ctx, Stream, events.Forward, from, 0)
	if err != nil {
		return fmt.Errorf("read %s: %w", Stream, err)
	}
	for _, r := range rs {
		p, err := schema.Decode(r.Envelope)
		if err != nil {
			return &events.CorruptEventError{Stream: r.Stream, Revision: r.Revision, Position: r.Position, Err: err}
		}
		l.apply(p, r.Time)
		l.revision, l.exists = r.Revision, true
	}
	return nil
}

func (l *List) apply(p schema.Payload, at time.Time) {
	switch e := p.(type) {
	case schema.ApprovalGranted:
		k := judge.Key(e.Pattern)
		l.granted[k] = Grant{Pattern: k, By: e.By, Session: e.Session, Command: e.Command, At: at}
	case schema.ApprovalRevoked:
		delete(l.granted, judge.Key(e.Pattern))
	}
}
