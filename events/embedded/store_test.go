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
	storetest.Run(t, func(t *testing.T) events.Store { return openTemp(t) })
}
