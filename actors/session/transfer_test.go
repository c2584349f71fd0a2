package session_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/blobs"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/schema"
)

// TestExportImportCarriesImages: an export carries the bytes of the
// images its events name, and an import into another home stores them
// before it appends the events; a damaged or missing image fails the
// import and nothing is written.
func TestExportImportCarriesImages(t *testing.T) {
	ctx := context.Background()
	homeA, homeB := t.TempDir(), t.TempDir()
	a, err := embedded.Open(filepath.Join(homeA, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	blobsA := blobs.Open(homeA)
	img := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte("pixels"), 100)...)
	ref, err := blobsA.PutImage(ctx, img, "shot.png")
	if err != nil {
		t.Fatal(err)
	}
	meta := schema.Meta{SessionID: "s1"}
	if _, err := a.Append(ctx, events.SessionStream("s1"), events.NoStream,
		schema.MustEnvelope(meta, schema.SessionStarted{Source: "cli"}),
		schema.MustEnvelope(meta, schema.UserMessageAdded{Content: "what is this?", Images: []schema.ImageRef{ref}}),
		schema.MustEnvelope(meta, schema.UserMessageAdded{Content: "and again", Images: []schema.ImageRef{ref}})); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := session.Export(ctx, a, "s1", &buf, blobsA); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), `{"blob":`); n != 1 {
		t.Fatalf("the export carries %d blob lines, want the one image once", n)
	}

	b, err := embedded.Open(filepath.Join(homeB, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	blobsB := blobs.Open(homeB)

	// Refusals first: nothing is written by any of them.
	damaged := strings.Replace(buf.String(), `"data":"iVBO`, `"data":"iVBP`, 1)
	missing := buf.String()[strings.Index(buf.String(), "\n")+1:]
	for name, in := range map[string]string{"damaged": damaged, "missing": missing} {
		if _, _, err := session.Import(ctx, b, strings.NewReader(in), "", blobsB); err == nil {
			t.Fatalf("%s image: the import was accepted", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
		if rs, _ := b.ReadStream(ctx, events.SessionStream("s1"), events.Forward, 0, 0); len(rs) != 0 {
			t.Fatalf("%s image: a failed import wrote events", name)
		}
		if blobsB.Has(ref.SHA256) {
			t.Fatalf("%s image: a failed import stored the blob", name)
		}
	}
	if _, _, err := session.Import(ctx, b, strings.NewReader(buf.String()), "", nil); err == nil {
		t.Fatal("an import of images with no blob store was accepted")
	}

	id, n, err := session.Import(ctx, b, bytes.NewReader(buf.Bytes()), "", blobsB)
	if err != nil || id != "s1" || n != 3 {
		t.Fatalf("import: %s %d %v", id, n, err)
	}
	got, err := blobsB.ReadImage(ctx, ref)
	if err != nil || !bytes.Equal(got, img) {
		t.Fatalf("the image did not arrive whole: %d bytes, %v", len(got), err)
	}
	rs, _ := b.ReadStream(ctx, events.SessionStream("s1"), events.Forward, 0, 0)
	p, err := schema.Decode(rs[1].Envelope)
	if err != nil || len(p.(schema.UserMessageAdded).Images) != 1 || p.(schema.UserMessageAdded).Images[0] != ref {
		t.Fatalf("imported event: %+v %v", p, err)
	}
	// Exported again from B, the same file: the round trip is exact.
	var again bytes.Buffer
	if _, err := session.Export(ctx, b, "s1", &again, blobsB); err != nil || again.String() != buf.String() {
		t.Fatalf("export from the import differs: %v", err)
	}
}
