package schema

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// FuzzDecode feeds stored envelopes (the JSON of one event, as fixtures,
// exports and imports hold it) to the decoder. Whatever the bytes, it must
// not panic; it must agree with Check on what it knows; whatever it
// accepts must survive being written at the current version and read
// again unchanged (as JSON); and the fast JSON decoder must read it exactly as the
// standard library does. The seed corpus is testdata/fuzz/FuzzDecode (the
// golden fixtures and damaged variants of them):
//
//	go test -run '^$' -fuzz FuzzDecode -fuzztime 5m ./schema/
func FuzzDecode(f *testing.F) {
	fixtures, _ := filepath.Glob(filepath.Join("testdata", "events", "*.json"))
	for _, p := range fixtures {
		if strings.HasSuffix(p, ".decoded.json") {
			continue
		}
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var env Envelope
		if err := json.Unmarshal(raw, &env); err != nil {
			return
		}
		p, err := Decode(env)
		if cerr := Check(env); cerr != nil {
			var ute *UnknownTypeError
			if err == nil || !errors.As(err, &ute) {
				t.Fatalf("Check says %v, Decode says %v", cerr, err)
			}
			return
		}
		std, stdErr := decodeStd(env)
		if (err == nil) != (stdErr == nil) {
			t.Fatalf("%s v%d %q: fast decoder says %v, encoding/json says %v", env.Type, env.Version, env.Payload, err, stdErr)
		}
		if err != nil {
			return
		}
		if !reflect.DeepEqual(p, std) {
			t.Fatalf("%s v%d %q: fast decoder reads %#v, encoding/json %#v", env.Type, env.Version, env.Payload, p, std)
		}
		if p.EventType() != env.Type {
			t.Fatalf("%s decoded into %T", env.Type, p)
		}
		again, err := NewEnvelope(Meta{SessionID: env.SessionID}, p)
		if err != nil {
			t.Fatalf("re-encode %T: %v", p, err)
		}
		p2, err := Decode(again)
		if err != nil {
			t.Fatalf("%s written at the current version does not decode: %v\n%s", env.Type, err, again.Payload)
		}
		// Compared as written: an empty list and no list are one thing.
		if b2, _ := json.Marshal(p2); string(b2) != string(again.Payload) {
			t.Fatalf("%s changed on a round trip:\n%s\n%s", env.Type, again.Payload, b2)
		}
	})
}

// decodeStd is Decode with the standard library's JSON decoder, the
// reference the fast one promises to match.
func decodeStd(e Envelope) (Payload, error) {
	t := registry[e.Type]
	data := []byte(e.Payload)
	for v := e.Version; v < t.current; v++ {
		var err error
		if data, err = t.up[v](data); err != nil {
			return nil, err
		}
	}
	ptr := reflect.New(reflect.TypeOf(samplePayload(e.Type)))
	if err := json.Unmarshal(data, ptr.Interface()); err != nil {
		return nil, err
	}
	return ptr.Elem().Interface().(Payload), nil
}

func samplePayload(typ string) Payload {
	for _, s := range samples {
		if s.EventType() == typ {
			return s
		}
	}
	panic("no sample of " + typ)
}
