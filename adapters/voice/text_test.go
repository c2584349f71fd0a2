package voice

import (
	"strings"
	"testing"
)

func TestSpeakable(t *testing.T) {
	for in, want := range map[string]string{
		"**Done.** See [the docs](https://x.io/d).":               "Done. See the docs.",
		"# Title\n- one\n- two":                                   "Title\none\ntwo",
		"Run:\n```sh\nrm -rf /tmp/x\n```\nthen `ls`.":             "Run:\n \nthen ls.",
		"Here: MEDIA:/home/h/cache/audio/a.ogg and https://a.b/c": "Here: and",
	} {
		if got := Speakable(in); got != want {
			t.Errorf("Speakable(%q) = %q, want %q", in, got, want)
		}
	}
	long := strings.Repeat("A sentence here. ", 400)
	if got := Speakable(long); len(got) > MaxSpoken || !strings.HasSuffix(got, ".") {
		t.Errorf("long: %d chars ending %q", len(got), got[len(got)-5:])
	}
}
