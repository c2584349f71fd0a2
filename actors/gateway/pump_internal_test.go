package gateway

import (
	"slices"
	"testing"

	"github.com/hermes-go/hermes/schema"
)

func TestCoalesceDeltas(t *testing.T) {
	d := func(key, reply, text string) queued {
		return queued{out: schema.Outbound{Kind: schema.OutboundDelta, Key: key, InReplyTo: reply, Text: text}, corr: "c-" + reply}
	}
	k := func(kind, key, reply string) queued {
		return queued{out: schema.Outbound{Kind: kind, Key: key, InReplyTo: reply, Text: kind}, corr: "c-" + reply}
	}
	show := func(ms []queued) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.out.Key+"/"+m.out.InReplyTo+":"+m.out.Kind+":"+m.out.Text)
		}
		return out
	}
	for _, c := range []struct {
		name string
		in   []queued
		want []string
	}{
		{"one answer's deltas merge, typing and reply stay", []queued{k("typing", "a", "1"), d("a", "1", "Ans"), d("a", "1", "wer"), d("a", "1", "ed."), k("reply", "a", "1")},
			[]string{"a/1:typing:typing", "a/1:delta:Answered.", "a/1:reply:reply"}},
		{"another chat between them does not split them", []queued{d("a", "1", "x"), d("b", "2", "y"), d("a", "1", "z"), d("b", "2", "w")},
			[]string{"a/1:delta:xz", "b/2:delta:yw"}},
		{"a message of the same chat between them does", []queued{d("a", "1", "x"), k("progress", "a", "1"), d("a", "1", "z")},
			[]string{"a/1:delta:x", "a/1:progress:progress", "a/1:delta:z"}},
		{"deltas of another answer of the chat stay apart", []queued{d("a", "1", "x"), d("a", "2", "y")},
			[]string{"a/1:delta:x", "a/2:delta:y"}},
		{"one message", []queued{d("a", "1", "x")}, []string{"a/1:delta:x"}},
	} {
		if got := show(coalesceDeltas(slices.Clone(c.in))); !slices.Equal(got, c.want) {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}
