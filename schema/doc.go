// Package schema is the versioned contract of Hermes: the envelope every
// stored event carries, the payload of every session event type at every
// version, and the upcasters that turn an old version into the current one.
//
// Events are stored as JSON. An event type never changes meaning once it has
// been written: a change in shape is a new version, registered with an
// upcaster from the previous one, and the golden fixtures under
// testdata/events keep every version decodable forever.
package schema
