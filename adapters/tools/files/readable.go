package files

import "github.com/hermes-go/hermes/actors/tool"

// Readable resolves a path argument as read_file does: a real absolute
// path inside the roots, never one of the home's secret files, for tools
// beside these that read files the model names (vision_analyze).
func (r Roots) Readable(env *tool.Env, p string) (string, error) {
	return r.resolve(env, p, reading)
}
