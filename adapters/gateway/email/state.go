package email

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// maxThreads bounds the messages remembered for threading replies; the
// oldest are forgotten first (a reply to one of them still threads, by
// In-Reply-To and the thread's root, under a generic subject).
const maxThreads = 512

// maxRefs bounds the References kept per message: the root and the most
// recent ones, as RFC 5322 suggests for long threads.
const maxRefs = 12

// state is what survives a restart: where in the mailbox the adapter is,
// and enough of each message handed on to thread its reply.
type state struct {
	path string

	UIDValidity uint32 `json:"uid_validity"`
	LastUID     uint32 `json:"last_uid"`
	// Messages maps a Message-ID handed on to its thread's subject and
	// the References a reply to it carries.
	Messages map[string]*thread `json:"messages,omitempty"`
	// Order lists Messages' keys, oldest first.
	Order []string `json:"order,omitempty"`
}

// thread is what a reply to one message needs.
type thread struct {
	Subject string   `json:"subject"`
	Refs    []string `json:"refs"`
}

func loadState(path string) (*state, error) {
	st := &state{path: path, Messages: map[string]*thread{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, fmt.Errorf("email state: %w", err)
	}
	if err := json.Unmarshal(data, st); err != nil {
		return nil, fmt.Errorf("email state %s is damaged (%v): remove it to start over (unseen mail is then answered)", path, err)
	}
	if st.Messages == nil {
		st.Messages = map[string]*thread{}
	}
	return st, nil
}

// save writes the state atomically (callers hold the adapter's lock).
func (s *state) save() error {
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return fmt.Errorf("email state: %w", err)
	}
	tmp := s.path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("email state: %w", err)
	}
	if err := os.Rename(tmp, s.path); err != nil {
		return fmt.Errorf("email state: %w", err)
	}
	return nil
}

// put remembers a message's thread, forgetting the oldest beyond
// maxThreads.
func (s *state) put(id string, t *thread) {
	if _, ok := s.Messages[id]; !ok {
		s.Order = append(s.Order, id)
	}
	s.Messages[id] = t
	for len(s.Order) > maxThreads {
		delete(s.Messages, s.Order[0])
		s.Order = s.Order[1:]
	}
}

// trimRefs keeps the root and the last maxRefs-1 references.
func trimRefs(refs []string) []string {
	if len(refs) <= maxRefs {
		return refs
	}
	out := append([]string{refs[0]}, refs[len(refs)-(maxRefs-1):]...)
	return out
}
