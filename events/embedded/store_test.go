package embedded

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/storetest"
)

func openTemp(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "events.db"), WithPollInterval(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) events.Store { return openTemp(t) }, storetest.Features{
		// The same file, opened again: after a restart, or beside the
		// first store as another process would.
		Reopen: func(t *testing.T, s events.Store) events.Store {
			s2, err := Open(s.(*Store).path, WithPollInterval(20*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			return s2
		},
		Shared: true,
	})
}
