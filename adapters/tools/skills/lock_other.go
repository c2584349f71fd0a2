//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package skills

// lockPath holds nothing on a system without flock(2): the expected
// revisions of the appends still order the changes of a skill's stream.
func lockPath(string) (unlock func(), err error) { return func() {}, nil }
