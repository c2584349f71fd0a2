// Package archtest holds the test that keeps the module's imports pointing
// inwards (see ARCHITECTURE.md at the repository root). It has no code of
// its own: only arch_test.go.
package archtest
