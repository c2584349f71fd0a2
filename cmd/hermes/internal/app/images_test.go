package app

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/events/blobs"
	"github.com/hermes-go/hermes/schema"
)

// The images among a platform message's attachments are stored and named
// to the turn; what cannot be shown gets a line saying why; files of
// other kinds are left alone.
func TestAttachmentImages(t *testing.T) {
	dir := t.TempDir()
	png, _ := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bs := blobs.Open(t.TempDir())
	stored, _ := bs.PutImage(context.Background(), png, "")
	atts := []schema.Attachment{
		{Kind: schema.AttachmentPhoto, Path: write("a.jpg", png), Name: "holiday.jpg"},
		{Kind: schema.AttachmentPhoto, Path: write("b.jpg", []byte("not really a jpeg"))},
		{Kind: schema.AttachmentDocument, Path: write("r.pdf", []byte("%PDF-1.4")), Name: "r.pdf", MimeType: "application/pdf"},
		{Kind: schema.AttachmentDocument, Path: write("s.png", png), Name: "s.png", MimeType: "image/png"},
		{Kind: schema.AttachmentVoice, Path: write("v.oga", []byte("OggS"))},
		{Kind: schema.AttachmentPhoto, Path: filepath.Join(dir, "gone.jpg"), Name: "gone.jpg"},
		{Kind: schema.AttachmentPhoto, SHA256: stored.SHA256, MimeType: "image/png", Size: stored.Size, Name: "image-1"},
	}
	refs, notes, err := AttachmentImages(bs)(context.Background(), atts)
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 3 || refs[0].Name != "holiday.jpg" || refs[0].MediaType != "image/png" || refs[1].Name != "s.png" || refs[2].SHA256 != stored.SHA256 {
		t.Fatalf("refs %+v", refs)
	}
	if len(notes) != 2 || !strings.Contains(notes[0], "photo is not a PNG") && !strings.Contains(notes[0], "not a PNG") || !strings.Contains(notes[1], "gone.jpg is no longer in the cache") {
		t.Fatalf("notes %q", notes)
	}
	for _, r := range refs {
		if _, err := bs.ReadImage(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
}
