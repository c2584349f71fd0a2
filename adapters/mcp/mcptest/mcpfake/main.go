// Command mcpfake serves one of mcptest's fake MCP servers on stdio:
// mcpfake basic|crash|hang|hang-handshake|malformed|many|exit. It is a
// small program for benchmarks and for trying Hermes' MCP client by hand
// (a test binary that serves them carries every package it tests).
package main

import (
	"fmt"
	"os"

	"github.com/hermes-go/hermes/adapters/mcp/mcptest"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: mcpfake basic|crash|hang|hang-handshake|malformed|many|exit")
		os.Exit(2)
	}
	os.Setenv(mcptest.EnvVar, os.Args[1])
	mcptest.MaybeServe()
}
