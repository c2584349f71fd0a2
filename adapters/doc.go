// Package adapters groups everything that touches the outside world: LLM
// providers (llm/), tools (tools/), the EventStoreDB store (eventstore/),
// gateway platforms (gateway/) and the watermill bus (bus/).
package adapters
