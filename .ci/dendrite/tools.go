//go:build tools

// Package tools pins the Dendrite homeserver (v0.13.8, in go.mod) that
// the Matrix adapter's tests run against. It is a module of its own, so
// the main module's ./... leaves it out; .ci/run builds its cmd/dendrite
// into bin/ and exports HERMES_DENDRITE.
package tools

import _ "github.com/matrix-org/dendrite/cmd/dendrite"
