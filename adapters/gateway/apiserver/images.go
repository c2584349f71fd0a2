package apiserver

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/hermes-go/hermes/events/blobs"
	"github.com/hermes-go/hermes/schema"
)

// Images keeps the images clients send (the home's blob store,
// events/blobs): PutImage checks the bytes (type by sniffing, size) and
// stores them durably before the message naming them is handed on.
type Images interface {
	PutImage(ctx context.Context, data []byte, name string) (schema.ImageRef, error)
}

// DefaultMaxBodyBytes is the default bound of a request body: 10 MB, the
// Python agent's, which holds a long conversation resent whole.
const DefaultMaxBodyBytes = 10_000_000

// maxImageBodyBytes is the default bound when images are taken: a 20 MiB
// image is about 27 MiB as base64.
const maxImageBodyBytes = 32 << 20

// storeImages decodes the data: URLs of a request's image parts, stores
// them and returns them as attachments naming their blobs. A remote URL
// is refused: this server fetches nothing a client names.
func (s *Server) storeImages(ctx context.Context, urls []string) ([]schema.Attachment, error) {
	if len(urls) == 0 {
		return nil, nil
	}
	if s.opts.Images == nil {
		return nil, badInput("this server takes no images: send text only")
	}
	var atts []schema.Attachment
	for i, u := range urls {
		name := fmt.Sprintf("image-%d", i+1)
		data, err := dataURL(u)
		if err != nil {
			return nil, badInput("image %d: %v", i+1, err)
		}
		ref, err := s.opts.Images.PutImage(ctx, data, name)
		if err != nil {
			if errors.Is(err, blobs.ErrNotImage) || errors.Is(err, blobs.ErrTooLarge) {
				return nil, badInput("image %d: %v (accepted: PNG, JPEG, GIF or WebP up to %d MiB)", i+1, err, blobs.MaxImageBytes>>20)
			}
			return nil, err
		}
		atts = append(atts, schema.Attachment{Kind: schema.AttachmentPhoto, Name: name, MimeType: ref.MediaType, Size: ref.Size, SHA256: ref.SHA256})
	}
	return atts, nil
}

// dataURL decodes a base64 data: URL.
func dataURL(u string) ([]byte, error) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		if strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://") {
			return nil, errors.New("remote image URLs are not fetched by this server: send the image inline as a data: URL (data:image/png;base64,…)")
		}
		return nil, errors.New("the image URL must be a data: URL (data:image/png;base64,…)")
	}
	meta, payload, ok := strings.Cut(rest, ",")
	if !ok || !strings.HasSuffix(meta, ";base64") {
		return nil, errors.New("the data: URL must be base64 (data:image/png;base64,…)")
	}
	// Refused before decoding: the length says enough.
	if base64.StdEncoding.DecodedLen(len(payload))-2 > blobs.MaxImageBytes {
		return nil, blobs.ErrTooLarge
	}
	data, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		if data, err = base64.RawStdEncoding.DecodeString(payload); err != nil {
			return nil, fmt.Errorf("the data: URL is not valid base64: %v", err)
		}
	}
	return data, nil
}

// images stores a request's images, answering the client itself (and
// returning false) when it cannot: nothing is handed on then.
func (s *Server) images(w http.ResponseWriter, r *http.Request, urls []string, code string) ([]schema.Attachment, bool) {
	atts, err := s.storeImages(r.Context(), urls)
	if err != nil {
		if msg, ok := asBadInput(err); ok {
			fail(w, http.StatusBadRequest, invalidRequest, code, msg)
			return nil, false
		}
		s.log.Error().Err(err).Msg("store a request's images")
		fail(w, http.StatusInternalServerError, serverError, "", "could not keep the request's images")
		return nil, false
	}
	return atts, true
}
