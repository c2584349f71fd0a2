package browser

import "github.com/hermes-go/hermes/actors/model"

// The tools' names and parameters are upstream Hermes's (tools/browser_tool.py
// and browser_dialog_tool.py), so a Hermes user's prompts and skills work
// here; the descriptions say what this implementation does.

func obj(required []string, props map[string]any) map[string]any {
	if required == nil {
		required = []string{}
	}
	return map[string]any{"type": "object", "required": required, "properties": props}
}

var navigateSpec = model.ToolSpec{
	Description: "Open a URL in the session's browser (a real headless Chromium; started on first use). Returns the page's compact snapshot: " +
		"interactive elements with refs (e1, e2, …) for browser_click and browser_type, so browser_snapshot is not needed right after. " +
		"For reading plain documents (.md, .txt, .json, APIs) web_extract or curl in the terminal are faster; use the browser to interact with pages.",
	Parameters: obj([]string{"url"}, map[string]any{
		"url": map[string]any{"type": "string", "description": "The URL to open (e.g. 'https://example.com')"},
	}),
}

var snapshotSpec = model.ToolSpec{
	Description: "Read the current page as its accessibility tree. full=false (default): the interactive elements with refs and the headings; " +
		"full=true: every named element and text too. Refs (e.g. e5, written @e5 too) are valid until the next snapshot. " +
		"Open dialogs are listed instead when one blocks the page. Snapshots over 15,000 characters are cut.",
	Parameters: obj(nil, map[string]any{
		"full": map[string]any{"type": "boolean", "default": false, "description": "Complete page content instead of the interactive elements only"},
	}),
}

var clickSpec = model.ToolSpec{
	Description: "Click the element with this ref from the last snapshot (e.g. '@e5'), as a mouse would, and return the page after it " +
		"(a navigation it starts is waited for; a download or a dialog it causes is reported).",
	Parameters: obj([]string{"ref"}, map[string]any{
		"ref": map[string]any{"type": "string", "description": "The element's ref from the snapshot (e.g. '@e5')"},
	}),
}

var typeSpec = model.ToolSpec{
	Description: "Type text into the input field with this ref: the field is cleared first. Returns the page after it.",
	Parameters: obj([]string{"ref", "text"}, map[string]any{
		"ref":  map[string]any{"type": "string", "description": "The field's ref from the snapshot (e.g. '@e3')"},
		"text": map[string]any{"type": "string", "description": "The text to type"},
	}),
}

var scrollSpec = model.ToolSpec{
	Description: "Scroll the page up or down by most of a screen, to reach content outside the viewport. Returns the page after it.",
	Parameters: obj([]string{"direction"}, map[string]any{
		"direction": map[string]any{"type": "string", "enum": []string{"up", "down"}, "description": "Direction to scroll"},
	}),
}

var backSpec = model.ToolSpec{
	Description: "Go back to the previous page in the browser's history.",
	Parameters:  obj(nil, map[string]any{}),
}

var pressSpec = model.ToolSpec{
	Description: "Press a key on the focused element: Enter submits a form, Tab moves focus, Escape closes things, ArrowDown moves in lists.",
	Parameters: obj([]string{"key"}, map[string]any{
		"key": map[string]any{"type": "string", "description": "Key to press (e.g. 'Enter', 'Tab', 'Escape', 'ArrowDown')"},
	}),
}

var imagesSpec = model.ToolSpec{
	Description: "List the images on the current page with their URLs, alt text and sizes.",
	Parameters:  obj(nil, map[string]any{}),
}

var visionSpec = model.ToolSpec{
	Description: "Take a screenshot of the current page and have the vision model (auxiliary.vision) answer a question about it: " +
		"for CAPTCHAs, layouts, charts and whatever the text snapshot misses. The screenshot is kept and its path returned.",
	Parameters: obj([]string{"question"}, map[string]any{
		"question": map[string]any{"type": "string", "description": "What you want to know about the page visually. Be specific."},
		"annotate": map[string]any{"type": "boolean", "default": false,
			"description": "Label the interactive elements [eN] on the screenshot; each label is the ref @eN for the other browser tools."},
	}),
}

var consoleSpec = model.ToolSpec{
	Description: "Read the page's console messages and uncaught JavaScript errors since the browser opened (or the last clear). " +
		"With expression, first evaluate JavaScript in the page and return its result as JSON (e.g. 'document.title').",
	Parameters: obj(nil, map[string]any{
		"clear":      map[string]any{"type": "boolean", "default": false, "description": "Empty the message buffer after reading it"},
		"expression": map[string]any{"type": "string", "description": "JavaScript to evaluate in the page; a promise is awaited"},
	}),
}

var dialogSpec = model.ToolSpec{
	Description: "Answer the JavaScript dialog (alert, confirm, prompt, beforeunload) that blocks the page: the other tools say when one is open. " +
		"accept clicks OK (prompt_text answers a prompt), dismiss clicks Cancel.",
	Parameters: obj([]string{"action"}, map[string]any{
		"action":      map[string]any{"type": "string", "enum": []string{"accept", "dismiss"}, "description": "'accept' (OK) or 'dismiss' (Cancel)"},
		"prompt_text": map[string]any{"type": "string", "description": "The answer to a prompt() dialog; ignored for the others"},
		"dialog_id":   map[string]any{"type": "string", "description": "Accepted for upstream compatibility; the oldest open dialog is answered"},
	}),
}

var closeSpec = model.ToolSpec{
	Description: "Close the session's browser and free its memory; the next browser call starts a fresh one (no pages, no cookies).",
	Parameters:  obj(nil, map[string]any{}),
}
