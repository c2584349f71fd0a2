package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// Asker reaches the person behind a turn that runs on this node: it sends
// the question to the caller of the turn (a gateway, which asks in the
// chat) and waits for the answer. A node's session manager takes it as
// its asker; Host makes the grains register each turn's caller in it. A
// question from a subagent goes to the caller of the turn of its nearest
// ancestor running here.
type Asker struct {
	store events.Store
	mu    sync.Mutex
	sys   *actor.ActorSystem
	// callers maps a session to the actors that asked for its turns in
	// flight (the latest one answers).
	callers map[string][]*actor.PID
}

// NewAsker returns the asker of a node whose sessions are in store.
func NewAsker(store events.Store) *Asker {
	return &Asker{store: store, callers: map[string][]*actor.PID{}}
}

func (a *Asker) register(sys *actor.ActorSystem, session string, pid *actor.PID) func() {
	a.mu.Lock()
	a.sys = sys
	a.callers[session] = append(a.callers[session], pid)
	a.mu.Unlock()
	return func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		l := a.callers[session]
		for i, p := range l {
			if p == pid {
				l = append(l[:i:i], l[i+1:]...)
				break
			}
		}
		if len(l) == 0 {
			delete(a.callers, session)
		} else {
			a.callers[session] = l
		}
	}
}

func (a *Asker) callerOf(session string) (*actor.ActorSystem, *actor.PID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	l := a.callers[session]
	if len(l) == 0 {
		return a.sys, nil
	}
	return a.sys, l[len(l)-1]
}

// question and answer travel between a node and a turn's caller.
type question struct {
	Session string   `json:"session"`
	Kind    string   `json:"kind"`
	Text    string   `json:"text"`
	Choices []string `json:"choices,omitempty"`
	// TimeoutMS is the question's own bound (0: none).
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
}

type answer struct {
	Text    string `json:"text"`
	Err     string `json:"err,omitempty"`
	NoAsker bool   `json:"no_asker,omitempty"`
}

// askWait bounds a question without a timeout of its own.
const askWait = 30 * time.Minute

// Ask implements tool.Asker.
func (a *Asker) Ask(ctx context.Context, q tool.Question) (string, error) {
	id := tool.EnvFrom(ctx).SessionID
	var sys *actor.ActorSystem
	var to *actor.PID
	for range 16 {
		if id == "" {
			break
		}
		if sys, to = a.callerOf(id); to != nil {
			break
		}
		parent, err := parentOf(ctx, a.store, id)
		if err != nil {
			return "", err
		}
		id = parent
	}
	if to == nil {
		return "", tool.ErrNoAsker
	}
	wait := askWait
	if q.Timeout > 0 {
		wait = q.Timeout + 5*time.Second
	}
	if d, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(d))
	}
	f := sys.Root.RequestFuture(to, encode(callerMsg{Ask: &question{Session: tool.EnvFrom(ctx).SessionID, Kind: q.Kind, Text: q.Text,
		Choices: q.Choices, TimeoutMS: q.Timeout.Milliseconds()}}), wait)
	type result struct {
		res any
		err error
	}
	got := make(chan result, 1)
	go func() {
		res, err := f.Result()
		got <- result{res, err}
	}()
	var r result
	select {
	case r = <-got:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	res, err := r.res, r.err
	if err != nil {
		return "", fmt.Errorf("ask the person through the turn's caller: %w", err)
	}
	b, ok := res.(*wrapperspb.BytesValue)
	if !ok {
		return "", fmt.Errorf("the turn's caller answered %T", res)
	}
	var ans answer
	if err := json.Unmarshal(b.Value, &ans); err != nil {
		return "", err
	}
	switch {
	case ans.NoAsker:
		return "", tool.ErrNoAsker
	case ans.Err != "":
		return "", errors.New(ans.Err)
	}
	return ans.Text, nil
}

// parentOf is the session that session id was started from ("" for none).
func parentOf(ctx context.Context, store events.Store, id string) (string, error) {
	rs, err := store.ReadStream(ctx, events.SessionStream(id), events.Forward, 0, 1)
	if err != nil || len(rs) == 0 {
		return "", err
	}
	p, err := schema.Decode(rs[0].Envelope)
	if err != nil {
		return "", err
	}
	st, ok := p.(schema.SessionStarted)
	if !ok {
		return "", nil
	}
	return st.ParentSessionID, nil
}

// answerQuestion asks the caller's asker q and sends the answer to the
// node waiting for it.
func answerQuestion(asker tool.Asker, root *actor.RootContext, to *actor.PID, b []byte) {
	var q question
	var ans answer
	if err := json.Unmarshal(b, &q); err != nil {
		ans.Err = "bad question: " + err.Error()
	} else if asker == nil {
		ans.NoAsker = true
	} else {
		ctx := tool.WithEnv(context.Background(), &tool.Env{SessionID: q.Session})
		text, err := asker.Ask(ctx, tool.Question{Kind: q.Kind, Text: q.Text, Choices: q.Choices, Timeout: time.Duration(q.TimeoutMS) * time.Millisecond})
		switch {
		case errors.Is(err, tool.ErrNoAsker):
			ans.NoAsker = true
		case err != nil:
			ans.Err = err.Error()
		}
		ans.Text = text
	}
	root.Send(to, encode(ans))
}
