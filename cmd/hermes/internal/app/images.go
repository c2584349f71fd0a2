package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/hermes-go/hermes/events/blobs"
	"github.com/hermes-go/hermes/schema"
)

// AttachmentImages is the gateway's Config.Images: the images among a
// platform message's attachments are kept in the home's blob store (the
// files platforms download into the cache, or blobs the API server stored
// already) and named to the turn. A photo that is not an image, or is
// over the limit, gets a line saying why the model does not see it; a
// document that is not an image is left to the text's note.
func AttachmentImages(bs *blobs.Store) func(context.Context, []schema.Attachment) ([]schema.ImageRef, []string, error) {
	return func(ctx context.Context, atts []schema.Attachment) ([]schema.ImageRef, []string, error) {
		var refs []schema.ImageRef
		var notes []string
		for _, a := range atts {
			name := a.Name
			if name == "" {
				name = a.Kind
			}
			if a.SHA256 != "" {
				if !bs.Has(a.SHA256) {
					notes = append(notes, fmt.Sprintf("[image %s is missing from the blob store]", name))
					continue
				}
				refs = append(refs, schema.ImageRef{SHA256: a.SHA256, MediaType: a.MimeType, Size: a.Size, Name: a.Name})
				continue
			}
			if a.Path == "" || !maybeImage(a) {
				continue
			}
			ref, err := bs.ReadImageFile(ctx, a.Path)
			switch {
			case err == nil:
				if a.Name != "" {
					ref.Name = a.Name
				}
				refs = append(refs, ref)
			case errors.Is(err, blobs.ErrNotImage):
				if a.Kind == schema.AttachmentPhoto {
					notes = append(notes, fmt.Sprintf("[the photo %s is not a PNG, JPEG, GIF or WebP image: the model does not see it]", name))
				}
			case errors.Is(err, blobs.ErrTooLarge):
				notes = append(notes, fmt.Sprintf("[the image %s is over %d MiB: the model does not see it]", name, blobs.MaxImageBytes>>20))
			case errors.Is(err, os.ErrNotExist):
				notes = append(notes, fmt.Sprintf("[the image %s is no longer in the cache: the model does not see it]", name))
			default:
				return nil, nil, err
			}
		}
		return refs, notes, nil
	}
}

// maybeImage says whether an attachment is worth sniffing: photos, and
// documents whose type or name says image.
func maybeImage(a schema.Attachment) bool {
	if a.Kind == schema.AttachmentPhoto {
		return true
	}
	if a.Kind != schema.AttachmentDocument {
		return false
	}
	if strings.HasPrefix(a.MimeType, "image/") {
		return true
	}
	n := strings.ToLower(a.Name + a.Path)
	for _, e := range []string{".png", ".jpg", ".jpeg", ".gif", ".webp"} {
		if strings.HasSuffix(n, e) {
			return true
		}
	}
	return false
}
