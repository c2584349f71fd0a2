//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package skillhub

// lockPath holds nothing on a system without flock(2): git's own ref
// locks still keep two fetches from corrupting a cache.
func lockPath(string) (unlock func(), err error) { return func() {}, nil }
