package hooks_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/adapters/hooks"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

// TestPreGatewayDispatch: a pre_gateway_dispatch shell hook sees each
// message a person sends through the gateway before its chat acts on it:
// {"action":"skip"} drops it (no turn, no reply), {"action":"rewrite"}
// replaces its text for the model, anything else lets it on as it is.
func TestPreGatewayDispatch(t *testing.T) {
	hook := writeScript(t, `in=$(cat)
case "$in" in
  *'"text":"spam'*) echo '{"action": "skip", "reason": "spam"}' ;;
  *'"text":"shout '*) echo '{"action": "rewrite", "text": "SHOUTED"}' ;;
  *) echo '{"action": "allow"}' ;;
esac`)
	r, err := hooks.New(hooks.Config{hooks.PreGatewayDispatch: {{Command: hook}}}, hooks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := hooks.Fired(hooks.PreGatewayDispatch); !ok {
		t.Fatalf("pre_gateway_dispatch is not fired: %s", why)
	}
	rig := gatewaytest.Start(t, gatewaytest.Options{Dir: t.TempDir(),
		Script: []llmtest.Reply{{Content: "first answer"}, {Content: "second answer"}},
		Config: gateway.Config{Auth: gateway.Auth{AllowAll: true}, TypingEvery: time.Hour, Dispatch: r.GatewayDispatch}})
	chat := gatewaytest.NewChat("testchat")
	rig.Serve(chat, nil)
	<-chat.Ready()
	chat.Post(t, gatewaytest.DM("7", "m1", "spam spam spam"))
	chat.Post(t, gatewaytest.DM("7", "m2", "shout this please"))
	got := chat.WaitReplies(t, 1)
	if got[0].InReplyTo != "m2" || got[0].Text != "first answer" {
		t.Fatalf("replies %+v", got)
	}
	chat.Post(t, gatewaytest.DM("7", "m3", "a plain question"))
	chat.WaitReplies(t, 2)
	reqs := rig.LLM.Requests()
	if len(reqs) != 2 || !strings.Contains(string(reqs[0].Raw), "SHOUTED") || strings.Contains(string(reqs[0].Raw), "shout this please") ||
		!strings.Contains(string(reqs[1].Raw), "a plain question") || strings.Contains(string(reqs[1].Raw), "spam") {
		t.Fatalf("%d model calls; first %s", len(reqs), reqs[0].Raw)
	}
	time.Sleep(200 * time.Millisecond)
	if n := len(chat.Replies()); n != 2 {
		t.Fatalf("%d replies: the skipped message was answered", n)
	}
}
