// Package protoreg lets two dependencies that both register a protobuf
// file named "gossip.proto" (the EventStoreDB client's and protoactor-go's
// cluster) link into one program: by default the protobuf runtime panics
// at start on the clash of file names. Their messages have distinct full
// names (event_store.client.gossip.* and cluster.*), which is what
// serialization looks up, so ignoring the file-name clash is safe.
//
// The runtime reads the policy from GOLANG_PROTOBUF_REGISTRATION_CONFLICT
// when a conflict happens, during package initialisation. This package
// imports only os, so it is initialised before either protobuf package
// (Go initialises ready packages in import-path order, and both depend on
// google.golang.org/protobuf, which sorts after this one); main calls
// Restore once initialisation is over so that child processes do not
// inherit the setting.
package protoreg

import "os"

const env = "GOLANG_PROTOBUF_REGISTRATION_CONFLICT"

var set bool

func init() {
	if os.Getenv(env) == "" {
		os.Setenv(env, "ignore")
		set = true
	}
}

// Restore removes the setting made at initialisation.
func Restore() {
	if set {
		os.Unsetenv(env)
		set = false
	}
}
