package mcp

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/actors/model"
)

func js(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func parse(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestSanitize(t *testing.T) {
	cases := []struct {
		name     string
		in       string
		dialects []Dialect
		want     string
		renames  string
	}{
		{"nothing", `null`, []Dialect{OpenAI}, `{"properties":{},"type":"object"}`, ``},
		{"not an object", `"object"`, []Dialect{Anthropic}, `{"properties":{},"type":"object"}`, ``},
		{"missing type and properties", `{"properties":{"a":{"type":"object"}}}`, []Dialect{OpenAI},
			`{"properties":{"a":{"properties":{},"type":"object"}},"type":"object"}`, ``},
		{"required names only declared properties", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a","ghost"]}`, []Dialect{OpenAI},
			`{"properties":{"a":{"type":"string"}},"required":["a"],"type":"object"}`, ``},
		{"arrays say what their items are", `{"type":"object","properties":{"l":{"type":"array"}}}`, []Dialect{OpenAI},
			`{"properties":{"l":{"items":{},"type":"array"}},"type":"object"}`, ``},
		{"boolean and junk subschemas", `{"type":"object","properties":{"any":true,"never":false,"m":{"type":"object","additionalProperties":"object"}}}`, []Dialect{OpenAI},
			`{"properties":{"any":{},"m":{"additionalProperties":{},"properties":{},"type":"object"},"never":{"not":{}}},"type":"object"}`, ``},
		{"$schema dropped, definitions become $defs, default beside $ref dropped",
			`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","definitions":{"P":{"type":"string"}},"properties":{"p":{"$ref":"#/definitions/P","default":"x"},"definitions":{"type":"string"}}}`,
			[]Dialect{OpenAI},
			`{"$defs":{"P":{"type":"string"}},"properties":{"definitions":{"type":"string"},"p":{"$ref":"#/$defs/P"}},"type":"object"}`, ``},
		{"OpenAI: one type name", `{"type":"object","properties":{"a":{"type":["string","null"]},"b":{"type":["string","integer"]}}}`, []Dialect{OpenAI},
			`{"properties":{"a":{"type":"string"},"b":{"anyOf":[{"type":"string"},{"type":"integer"}]}},"type":"object"}`, ``},
		{"OpenAI keeps $defs and nullable anyOf", `{"type":"object","$defs":{"P":{"type":"integer"}},"properties":{"p":{"$ref":"#/$defs/P"},"o":{"anyOf":[{"type":"string"},{"type":"null"}]}}}`, []Dialect{OpenAI},
			`{"$defs":{"P":{"type":"integer"}},"properties":{"o":{"anyOf":[{"type":"string"},{"type":"null"}]},"p":{"$ref":"#/$defs/P"}},"type":"object"}`, ``},
		{"Anthropic: refs inlined, nullable unions collapsed",
			`{"type":"object","$defs":{"P":{"type":"object","properties":{"x":{"type":"number"}},"required":["x"]}},"properties":{"p":{"$ref":"#/$defs/P","description":"where"},"o":{"anyOf":[{"type":"string"},{"type":"null"}],"default":null,"description":"opt"}}}`,
			[]Dialect{Anthropic},
			`{"properties":{"o":{"description":"opt","type":"string"},"p":{"description":"where","properties":{"x":{"type":"number"}},"required":["x"],"type":"object"}},"type":"object"}`, ``},
		{"Anthropic: recursive definitions stop", `{"type":"object","$defs":{"N":{"type":"object","properties":{"kid":{"$ref":"#/$defs/N"}}}},"properties":{"root":{"$ref":"#/$defs/N"}}}`,
			[]Dialect{Anthropic}, ``, ``},
		{"Anthropic: property names renamed", `{"type":"object","properties":{"ok.name-1":{"type":"string"},"bad key!":{"type":"string"},"bad_key_":{"type":"integer"}},"required":["bad key!"]}`,
			[]Dialect{Anthropic},
			`{"properties":{"bad_key_":{"type":"integer"},"bad_key__2":{"type":"string"},"ok.name-1":{"type":"string"}},"required":["bad_key__2"],"type":"object"}`,
			`{"bad_key__2":"bad key!"}`},
		{"top-level anyOf merged", `{"anyOf":[{"type":"object","properties":{"id":{"type":"string"},"q":{"type":"string"}},"required":["id","q"]},{"type":"object","properties":{"id":{"type":"string"},"url":{"type":"string"}},"required":["id","url"]}]}`,
			[]Dialect{OpenAI, Anthropic},
			`{"description":"Give the properties of one of 2 alternative argument sets.","properties":{"id":{"type":"string"},"q":{"type":"string"},"url":{"type":"string"}},"required":["id"],"type":"object"}`, ``},
		{"top-level allOf merged", `{"allOf":[{"properties":{"a":{"type":"string"}},"required":["a"]},{"properties":{"b":{"type":"string"}},"required":["b"]}]}`,
			[]Dialect{OpenAI},
			`{"properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a","b"],"type":"object"}`, ``},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := parse(t, c.in)
			before := js(t, in)
			got := Sanitize(in, c.dialects...)
			if js(t, in) != before {
				t.Fatal("the input was changed")
			}
			if c.want != "" && js(t, got.Params) != c.want {
				t.Fatalf("\n got %s\nwant %s", js(t, got.Params), c.want)
			}
			if c.renames != "" && js(t, got.Renames) != c.renames {
				t.Fatalf("renames %s, want %s", js(t, got.Renames), c.renames)
			}
			checkDialects(t, got.Params, c.dialects)
		})
	}
}

// checkDialects asserts what the providers refuse is gone.
func checkDialects(t *testing.T, p map[string]any, ds []Dialect) {
	t.Helper()
	if p["type"] != "object" {
		t.Fatalf("top level: %v", p["type"])
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf", "not", "enum"} {
		if _, ok := p[k]; ok {
			t.Fatalf("top-level %s left", k)
		}
	}
	text := js(t, p)
	for _, d := range ds {
		switch d {
		case Anthropic:
			if strings.Contains(text, `"$ref"`) || strings.Contains(text, `"$defs"`) || strings.Contains(text, `{"type":"null"}`) {
				t.Fatalf("Anthropic gets refs or nullable unions: %s", text)
			}
			for name := range p["properties"].(map[string]any) {
				if !propertyName.MatchString(name) {
					t.Fatalf("Anthropic gets property %q", name)
				}
			}
		case OpenAI:
			if strings.Contains(text, `"type":[`) {
				t.Fatalf("OpenAI-compatible servers get a type list: %s", text)
			}
		}
	}
}

func TestDialectsOf(t *testing.T) {
	if d := DialectsOf(model.ModeChatCompletions, model.ModeResponses); len(d) != 1 || d[0] != OpenAI {
		t.Fatalf("%v", d)
	}
	if d := DialectsOf(model.ModeAnthropic, model.ModeChatCompletions, model.ModeAnthropic); len(d) != 2 {
		t.Fatalf("%v", d)
	}
	if d := DialectsOf(); len(d) != 1 {
		t.Fatalf("%v", d)
	}
}

func TestToolName(t *testing.T) {
	for _, c := range []struct{ server, tool, want string }{
		{"github", "list_issues", "mcp_github_list_issues"},
		{"my-server", "get.thing", "mcp_my_server_get_thing"},
		{"everything", "get-tiny-image", "mcp_everything_get_tiny_image"},
	} {
		if got := ToolName(c.server, c.tool); got != c.want {
			t.Errorf("%s/%s: %s", c.server, c.tool, got)
		}
	}
	long := strings.Repeat("x", 80)
	a, b := ToolName("srv", long+"a"), ToolName("srv", long+"b")
	if len(a) != 64 || a == b || !strings.HasPrefix(a, "mcp_srv_xxx") {
		t.Fatalf("long names: %s %s", a, b)
	}
	if Toolset("github") != "mcp-github" {
		t.Fatal(Toolset("github"))
	}
}
