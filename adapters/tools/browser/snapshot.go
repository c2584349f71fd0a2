package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
)

// refNode is what a ref from a snapshot stands for.
type refNode struct {
	id         cdp.BackendNodeID
	role, name string
}

// interactive are the roles a person acts on: each gets a ref.
var interactive = map[string]bool{
	"button": true, "link": true, "textbox": true, "searchbox": true, "checkbox": true, "radio": true,
	"combobox": true, "listbox": true, "option": true, "menuitem": true, "menuitemcheckbox": true,
	"menuitemradio": true, "tab": true, "switch": true, "slider": true, "spinbutton": true, "treeitem": true,
}

// landmarks are kept in the compact view beside the interactive roles,
// so the model knows where on the page it is.
var landmarks = map[string]bool{"heading": true, "dialog": true, "alert": true, "alertdialog": true}

// skipped roles carry nothing of their own; their children are shown in
// their place.
var skipped = map[string]bool{
	"none": true, "generic": true, "InlineTextBox": true, "LineBreak": true, "presentation": true,
	"RootWebArea": true, "WebArea": true, "paragraph": false,
}

// maxSnapshot is where a snapshot is cut (upstream cuts at 15,000).
const maxSnapshot = 15000

// snapshot reads the page's accessibility tree as indented lines, the
// interactive elements with refs (e1, e2, …) that browser_click and
// browser_type take. full keeps every named node; compact keeps the
// interactive ones and the headings.
func snapshot(ctx context.Context, full bool) (string, map[string]refNode, error) {
	res, err := chromedp.Call(ctx, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	if err != nil {
		return "", nil, fmt.Errorf("read the accessibility tree: %w", err)
	}
	byID := make(map[accessibility.NodeID]*accessibility.Node, len(res.Nodes))
	var root *accessibility.Node
	for _, n := range res.Nodes {
		byID[n.NodeID] = n
		if root == nil && n.ParentID == "" {
			root = n
		}
	}
	refs := map[string]refNode{}
	var b strings.Builder
	var walk func(n *accessibility.Node, depth int)
	walk = func(n *accessibility.Node, depth int) {
		role, name := axString(n.Role), strings.TrimSpace(axString(n.Name))
		shown := false
		if !n.Ignored && !skipped[role] {
			switch {
			case interactive[role]:
				shown = true
			case landmarks[role]:
				shown = true
			case full && role == "StaticText":
				// The parent's name usually says it; text on its own is
				// shown where it is not the parent's name.
				shown = name != "" && !parentNamed(byID, n, name)
			case full:
				shown = name != "" || role == "img" || role == "table" || role == "list" || role == "form"
			}
		}
		if shown && b.Len() < maxSnapshot+1 {
			line := strings.Repeat("  ", depth) + "- " + role
			if role == "StaticText" {
				line = strings.Repeat("  ", depth) + "- text"
			}
			if name != "" {
				line += " " + quote(name)
			}
			if interactive[role] && n.BackendDOMNodeID != 0 {
				ref := fmt.Sprintf("e%d", len(refs)+1)
				refs[ref] = refNode{id: n.BackendDOMNodeID, role: role, name: name}
				line += " [ref=" + ref + "]"
			}
			if v := strings.TrimSpace(axString(n.Value)); v != "" && v != name {
				line += ": " + quote(v)
			}
			for _, p := range n.Properties {
				switch p.Name {
				case "checked", "selected", "expanded", "pressed":
					if v := axString(p.Value); v != "" && v != "false" {
						line += fmt.Sprintf(" [%s=%s]", p.Name, v)
					} else if p.Name == "checked" {
						line += " [checked=false]"
					}
				case "disabled", "required", "readonly", "focused":
					if axString(p.Value) == "true" {
						line += " [" + string(p.Name) + "]"
					}
				case "level":
					line += " [level=" + axString(p.Value) + "]"
				}
			}
			b.WriteString(line)
			b.WriteByte('\n')
			depth++
		}
		for _, c := range n.ChildIDs {
			if k := byID[c]; k != nil {
				walk(k, depth)
			}
		}
	}
	if root != nil {
		walk(root, 0)
	}
	out := b.String()
	if len(out) > maxSnapshot {
		cut := strings.LastIndexByte(out[:maxSnapshot], '\n')
		out = out[:cut+1] + fmt.Sprintf("[… snapshot cut at %d characters; refs beyond it are not shown: scroll, or read the page with browser_console's expression]\n", maxSnapshot)
	}
	if strings.TrimSpace(out) == "" {
		out = "(the page shows nothing a snapshot can name)\n"
	}
	return out, refs, nil
}

// parentNamed says whether text is the name of n's nearest shown parent.
func parentNamed(byID map[accessibility.NodeID]*accessibility.Node, n *accessibility.Node, text string) bool {
	for p := byID[n.ParentID]; p != nil; p = byID[p.ParentID] {
		if skipped[axString(p.Role)] || p.Ignored {
			continue
		}
		return strings.TrimSpace(axString(p.Name)) == text
	}
	return false
}

// axString is an accessibility value as text.
func axString(v *accessibility.Value) string {
	if v == nil || len(v.Value) == 0 {
		return ""
	}
	var s string
	if err := json.Unmarshal(v.Value, &s); err == nil {
		return s
	}
	return string(v.Value)
}

// quote is a name in double quotes, on one line, at most 200 characters.
func quote(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
}

// jsonUnmarshal is encoding/json's Unmarshal (the protocol's raw values
// are plain JSON).
func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
