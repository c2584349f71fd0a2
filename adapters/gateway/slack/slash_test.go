package slack_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/adapters/gateway/slack"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

// A Slack client takes a message starting with "/" for its own slash
// command, so the chat commands are typed after /hermes: "/hermes new" is
// the gateway's /new, "/hermes model m-2" its /model; a prompt that only
// starts with a command's word ("start a new project") stays a prompt.
func TestSlashCommandRunsChatCommands(t *testing.T) {
	p := startPeer(t)
	s := start(t, p, eventsAPI, llmtest.Reply{Content: "A plan."})
	ep := s.events + slack.CommandsPath
	n := 0
	send := func(text string) string {
		t.Helper()
		n++
		form := url.Values{"token": {"x"}, "team_id": {"T024BE7LD"}, "channel_id": {dm}, "channel_name": {"directmessage"},
			"user_id": {alice}, "user_name": {"alice"}, "command": {"/hermes"}, "text": {text},
			"response_url": {"https://hooks.slack.com/commands/1234/5678"}, "trigger_id": {"1.2." + strings.Repeat("9", n)}}
		resp := signedForm(t, ep, form)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: status %d", text, resp.StatusCode)
		}
		return p.rec.waitPosts(t, dm, n)[n-1].Text
	}
	if got := send("new"); got != "New conversation started." {
		t.Fatalf("/hermes new: %q", got)
	}
	if got := send("model m-2"); got != "This chat now uses m-2." {
		t.Fatalf("/hermes model m-2: %q", got)
	}
	if got := send("start a new project"); got != "A plan." {
		t.Fatalf("/hermes start a new project: %q", got)
	}
	if reqs := s.rig.LLM.Requests(); len(reqs) != 1 || !strings.Contains(string(reqs[0].Raw), "start a new project") {
		t.Fatalf("the prompt did not reach the model: %d requests", len(reqs))
	}
}
