package imagegen

import (
	"context"
	"strings"
)

// Provider describes one image service image_generate speaks, with
// upstream's names: image_gen.provider's value, the variable its key is
// read from, the variables that override its base URL and model, and its
// defaults.
type Provider struct {
	// Name is image_gen.provider's value (and image_gen.<name>: holds
	// its model and base_url).
	Name string
	// KeyEnv is the variable holding the key; BaseURLEnv ("": none) and
	// ModelEnv override image_gen.<name>.base_url and .model.
	KeyEnv, BaseURLEnv, ModelEnv string
	// BaseURL and Model are the defaults. Model "" (deepinfra): the first
	// image model of the service's own catalog.
	BaseURL, Model string
	// TopModel says whether image_gen.model (the key upstream's model
	// picker writes) names a model of this provider.
	TopModel func(model string) bool
}

// Providers are the services this build speaks, upstream's default (fal)
// first after openai, this build's default. Upstream's openai-codex (the
// ChatGPT account's Codex Responses backend, signed in with OAuth) and nous
// (Nous Portal, its OAuth device login) need an account's sign-in this
// build does not do, so they are not here.
func Providers() []Provider {
	all := func(string) bool { return true }
	// FAL's and OpenRouter's models are owner/name.
	owned := func(m string) bool { return strings.Contains(m, "/") }
	return []Provider{
		{Name: "openai", KeyEnv: "OPENAI_API_KEY", BaseURLEnv: "OPENAI_BASE_URL", BaseURL: "https://api.openai.com/v1", Model: "gpt-image-1", TopModel: all},
		{Name: "fal", KeyEnv: "FAL_KEY", ModelEnv: "FAL_IMAGE_MODEL", BaseURL: "https://queue.fal.run", Model: "fal-ai/flux-2/klein/9b", TopModel: owned},
		{Name: "openrouter", KeyEnv: "OPENROUTER_API_KEY", BaseURLEnv: "OPENROUTER_BASE_URL", ModelEnv: "OPENROUTER_IMAGE_MODEL",
			BaseURL: "https://openrouter.ai/api/v1", Model: openrouterModels[0], TopModel: owned},
		{Name: "xai", KeyEnv: "XAI_API_KEY", BaseURLEnv: "XAI_BASE_URL", ModelEnv: "XAI_IMAGE_MODEL", BaseURL: "https://api.x.ai/v1", Model: "grok-imagine-image",
			TopModel: func(string) bool { return false }},
		{Name: "deepinfra", KeyEnv: "DEEPINFRA_API_KEY", BaseURLEnv: "DEEPINFRA_BASE_URL", ModelEnv: "DEEPINFRA_IMAGE_MODEL", BaseURL: "https://api.deepinfra.com/v1/openai",
			TopModel: func(string) bool { return false }},
		{Name: "krea", KeyEnv: "KREA_API_KEY", ModelEnv: "KREA_IMAGE_MODEL", BaseURL: "https://api.krea.ai", Model: "krea-2-medium",
			TopModel: func(m string) bool { return kreaPaths[m] != "" }},
	}
}

// Lookup finds a provider by name (case-insensitive; "" is openai).
func Lookup(name string) (Provider, bool) {
	name = strings.ToLower(strings.TrimSpace(name))
	if name == "" {
		name = "openai"
	}
	for _, p := range Providers() {
		if p.Name == name {
			return p, true
		}
	}
	return Provider{}, false
}

// Names lists the providers' names, for messages.
func Names() []string {
	var out []string
	for _, p := range Providers() {
		out = append(out, p.Name)
	}
	return out
}

// generator makes one image: its bytes, or a URL (http(s) or data:) to
// fetch them from.
type generator interface {
	generate(ctx context.Context, prompt, aspect string) (image, error)
}

// image is what a service answered.
type image struct {
	data          []byte
	url           string
	model         string
	revisedPrompt string
}

// aspectIndex orders the three aspect ratios in the size tables below.
var aspectIndex = map[string]int{"landscape": 0, "square": 1, "portrait": 2}
