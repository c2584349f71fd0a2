package node

// The grain's own message (the others are the cluster's: ClusterInit and
// the BytesValue requests). It is sent as a pointer; Receive switches on
// the pointer types and logs (message_type) any other.

// turnEnded is a turn the grain ran finishing in its goroutine: its result
// joins the recent ones kept for retried requests, or is dropped when the
// session was busy elsewhere so that a retry runs it.
type turnEnded struct{ key string }
