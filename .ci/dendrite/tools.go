//go:build tools

// Package tools pins the Dendrite homeserver that the Matrix adapter's
// tests run against; .ci/run builds its commands from this module.
package tools

import (
	_ "github.com/matrix-org/dendrite/cmd/create-account"
	_ "github.com/matrix-org/dendrite/cmd/dendrite"
	_ "github.com/matrix-org/dendrite/cmd/generate-config"
	_ "github.com/matrix-org/dendrite/cmd/generate-keys"
)
