// Package allplatforms holds measurements of the whole gateway with every
// platform adapter connected at once, each to its real peer (see
// memory_bench_test.go). It has no code of its own: only tests.
package allplatforms
