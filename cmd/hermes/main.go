// Command hermes is the Hermes agent's command line: chat, inspect sessions
// and their events, and manage the read models built from them.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/protoreg"
)

func main() {
	protoreg.Restore()
	if err := newRoot(app.New()).Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "hermes:", err)
		var ee *exitError
		if errors.As(err, &ee) {
			os.Exit(ee.code)
		}
		os.Exit(1)
	}
}

// first is the first of vs that is not empty.
func first(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
