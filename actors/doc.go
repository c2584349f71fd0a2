// Package actors holds the protoactor-go actors of Hermes: one session actor
// per session (owning its stream, serialising turns, recovering by folding
// its events), the turn loop, subagents under supervision and tool runners.
// Pure logic they use lives in plain packages beside them.
package actors
