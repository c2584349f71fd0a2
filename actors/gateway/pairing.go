package gateway

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// PairingStream holds every pairing request, approval and revocation.
const PairingStream = "gateway-pairing"

// Pairing limits, as Hermes has them: a code is 8 characters of an
// alphabet without look-alikes, lives an hour, one user asks at most once
// per 10 minutes, a platform has at most 3 codes pending, and 5 wrong
// codes within an hour lock approvals for that hour.
//
// The pending cap never locks anyone out: a user holds at most one code
// (a new one replaces theirs), and a request on a platform with
// MaxPending codes waiting pushes out the oldest. Strangers asking for
// codes cannot keep someone else from getting one.
const (
	CodeLength      = 8
	CodeTTL         = time.Hour
	CodeInterval    = 10 * time.Minute
	MaxPending      = 3
	MaxRejections   = 5
	RejectionWindow = time.Hour
	codeAlphabet    = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
)

// Pending is a pairing code not yet approved.
type Pending struct {
	Platform, User, UserName, Chat string
	CodeHash                       string
	Requested, Expires             time.Time
}

// Paired is a user let in by a pairing.
type Paired struct {
	Platform, User, UserName string
	Since                    time.Time
}

// Pairings is the pairing stream folded.
type Pairings struct {
	Pending    []Pending
	Approved   map[string]Paired // by platform + "/" + user
	Rejections []time.Time
	// Revision is the stream's last revision, and Exists whether it has
	// any event: appends expect it exactly.
	Revision uint64
	Exists   bool
}

func pairKey(platform, user string) string { return platform + "/" + user }

// HashCode is how a code is kept.
func HashCode(code string) string {
	h := sha256.Sum256([]byte(strings.ToUpper(strings.TrimSpace(code))))
	return hex.EncodeToString(h[:])
}

// LoadPairings folds the pairing stream.
func LoadPairings(ctx context.Context, store events.Store) (*Pairings, error) {
	p := &Pairings{Approved: map[string]Paired{}}
	return p, p.refresh(ctx, store)
}

// refresh applies the events appended since the last load.
func (p *Pairings) refresh(ctx context.Context, store events.Store) error {
	from := uint64(0)
	if p.Exists {
		from = p.Revision + 1
	}
	rs, err := store.ReadStream(ctx, PairingStream, events.Forward, from, 0)
	if err != nil {
		return fmt.Errorf("read pairings: %w", err)
	}
	for _, r := range rs {
		if err := p.applyRecorded(r); err != nil {
			return err
		}
	}
	return nil
}

// applyRecorded applies one event of the pairing stream.
func (p *Pairings) applyRecorded(r events.Recorded) error {
	pl, err := schema.Decode(r.Envelope)
	if err != nil {
		return &events.CorruptEventError{Stream: r.Stream, Revision: r.Revision, Position: r.Position, Err: err}
	}
	p.apply(pl, r.Time)
	p.Revision, p.Exists = r.Revision, true
	return nil
}

// follow applies r, an event of the pairing stream as the router follows it:
// one already applied (this process's own append, or read by a refresh) is
// skipped, the next one is applied, and after a gap the stream is read
// again from where the fold stands.
func (p *Pairings) follow(ctx context.Context, store events.Store, r events.Recorded) error {
	switch {
	case p.Exists && r.Revision <= p.Revision:
		return nil
	case (!p.Exists && r.Revision == 0) || (p.Exists && r.Revision == p.Revision+1):
		return p.applyRecorded(r)
	}
	return p.refresh(ctx, store)
}

func (p *Pairings) apply(pl schema.Payload, at time.Time) {
	switch e := pl.(type) {
	case schema.PairingRequested:
		// A user's new code replaces their old one, and the oldest code of
		// a platform with MaxPending waiting makes room: part of the fold,
		// so every process that reads the stream drops the same codes.
		p.dropPending(e.Platform, e.User)
		n := 0
		for _, q := range p.Pending {
			if q.Platform == e.Platform {
				n++
			}
		}
		for i := 0; n >= MaxPending && i < len(p.Pending); {
			if p.Pending[i].Platform == e.Platform {
				p.Pending = append(p.Pending[:i], p.Pending[i+1:]...)
				n--
				continue
			}
			i++
		}
		p.Pending = append(p.Pending, Pending{Platform: e.Platform, User: e.User, UserName: e.UserName, Chat: e.Chat,
			CodeHash: e.CodeHash, Requested: at, Expires: e.ExpiresAt})
	case schema.PairingApproved:
		p.Approved[pairKey(e.Platform, e.User)] = Paired{Platform: e.Platform, User: e.User, UserName: e.UserName, Since: at}
		p.dropPending(e.Platform, e.User)
	case schema.PairingRevoked:
		delete(p.Approved, pairKey(e.Platform, e.User))
		p.dropPending(e.Platform, e.User)
	case schema.PairingRejected:
		p.Rejections = append(p.Rejections, at)
	}
}

func (p *Pairings) dropPending(platform, user string) {
	out := p.Pending[:0]
	for _, q := range p.Pending {
		if q.Platform != platform || q.User != user {
			out = append(out, q)
		}
	}
	p.Pending = out
}

// IsPaired reports whether user of platform was let in.
func (p *Pairings) IsPaired(platform, user string) bool {
	_, ok := p.Approved[pairKey(platform, user)]
	return ok
}

// Live returns the pending codes not yet expired, oldest first.
func (p *Pairings) Live(now time.Time) []Pending {
	var out []Pending
	for _, q := range p.Pending {
		if now.Before(q.Expires) {
			out = append(out, q)
		}
	}
	return out
}

// ApprovedList returns the paired users, sorted.
func (p *Pairings) ApprovedList() []Paired {
	out := make([]Paired, 0, len(p.Approved))
	for _, a := range p.Approved {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool {
		return pairKey(out[i].Platform, out[i].User) < pairKey(out[j].Platform, out[j].User)
	})
	return out
}

func (p *Pairings) expected() events.Expected {
	if !p.Exists {
		return events.NoStream
	}
	return events.Exact(p.Revision)
}

func (p *Pairings) append(ctx context.Context, store events.Store, pl schema.Payload) error {
	env, err := schema.NewEnvelope(schema.Meta{}, pl)
	if err != nil {
		return err
	}
	res, err := store.Append(ctx, PairingStream, p.expected(), env)
	if err != nil {
		return err
	}
	p.apply(pl, env.Time)
	p.Revision, p.Exists = res.NextRevision, true
	return nil
}

// ErrPairingLimited is returned when a code may not be given now.
var ErrPairingLimited = errors.New("pairing limited")

// Request gives user a new code, unless one was given to them within
// CodeInterval. The new code replaces the user's previous one; on a
// platform with MaxPending codes waiting it replaces the oldest. The code
// is returned; only its hash is recorded.
func (p *Pairings) Request(ctx context.Context, store events.Store, platform, user, userName, chat string, now time.Time) (string, error) {
	for _, q := range p.Live(now) {
		if q.Platform == platform && q.User == user && now.Sub(q.Requested) < CodeInterval {
			return "", fmt.Errorf("%w: a code was sent to this user at %s; it expires at %s", ErrPairingLimited,
				q.Requested.UTC().Format("15:04 UTC"), q.Expires.UTC().Format("15:04 UTC"))
		}
	}
	code, err := newCode()
	if err != nil {
		return "", err
	}
	err = p.append(ctx, store, schema.PairingRequested{Platform: platform, User: user, UserName: userName, Chat: chat,
		CodeHash: HashCode(code), ExpiresAt: now.Add(CodeTTL).UTC()})
	return code, err
}

// Approve lets in the user a live code was given to. A wrong code is
// recorded; after MaxRejections within RejectionWindow approvals are
// refused until the window has passed.
func (p *Pairings) Approve(ctx context.Context, store events.Store, code string, now time.Time) (Pending, error) {
	recent := 0
	for _, t := range p.Rejections {
		if now.Sub(t) < RejectionWindow {
			recent++
		}
	}
	if recent >= MaxRejections {
		return Pending{}, fmt.Errorf("%d wrong codes within the last hour: pairing approvals are locked for now, try again later", recent)
	}
	h := HashCode(code)
	for _, q := range p.Live(now) {
		if q.CodeHash == h {
			err := p.append(ctx, store, schema.PairingApproved{Platform: q.Platform, User: q.User, UserName: q.UserName, CodeHash: h})
			return q, err
		}
	}
	if err := p.append(ctx, store, schema.PairingRejected{Reason: "no live pairing code matches"}); err != nil {
		return Pending{}, err
	}
	return Pending{}, fmt.Errorf("no live pairing code %q (codes expire after %s; `hermes pairing list` shows the waiting ones)", code, CodeTTL)
}

// Revoke shuts user out. user may be "platform/user" or a bare user id
// when it is unambiguous.
func (p *Pairings) Revoke(ctx context.Context, store events.Store, who string) (Paired, error) {
	var found []Paired
	for k, a := range p.Approved {
		if k == who || a.User == who {
			found = append(found, a)
		}
	}
	switch len(found) {
	case 0:
		return Paired{}, fmt.Errorf("no paired user %q (see `hermes pairing list`)", who)
	case 1:
		return found[0], p.append(ctx, store, schema.PairingRevoked{Platform: found[0].Platform, User: found[0].User})
	}
	return Paired{}, fmt.Errorf("%q is paired on several platforms: name it as PLATFORM/USER", who)
}

func newCode() (string, error) {
	b := make([]byte, CodeLength)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	for i := range b {
		b[i] = codeAlphabet[int(b[i])%len(codeAlphabet)]
	}
	return string(b), nil
}
