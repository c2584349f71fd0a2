package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hermes-go/hermes/events/blobs"
	"github.com/hermes-go/hermes/schema"
)

// What attaches images to a chat message: --image FILE, and in a typed
// line an @path or a bare path of an existing image file. The bytes go to
// the home's blob store before the turn is asked for, so the user message
// that names them is appended only once they are on disk.

// imageExts are the names a bare path in a line must end with to be taken
// as an image to attach (the type itself is decided by the bytes).
var imageExts = []string{".png", ".jpg", ".jpeg", ".gif", ".webp"}

// storeImageFiles stores each file as an image; the first that is not an
// image, is over the limit or cannot be read fails them all.
func storeImageFiles(ctx context.Context, bs *blobs.Store, paths []string) ([]schema.ImageRef, error) {
	var refs []schema.ImageRef
	for _, p := range paths {
		ref, err := bs.ReadImageFile(ctx, expandHome(p))
		if err != nil {
			return nil, fmt.Errorf("--image: %w (accepted: PNG, JPEG, GIF or WebP up to %d MiB; nothing was sent)", err, blobs.MaxImageBytes>>20)
		}
		refs = append(refs, ref)
	}
	return refs, nil
}

// lineImages finds the images a typed line attaches: a word @PATH naming
// an existing file that is an image (or looks like one by its name: then
// it must be one), or a bare word that is the path of an existing file
// named like an image. The line's text is sent as typed.
func lineImages(ctx context.Context, bs *blobs.Store, line string) ([]schema.ImageRef, error) {
	var refs []schema.ImageRef
	for _, w := range strings.Fields(line) {
		at := strings.HasPrefix(w, "@")
		p := strings.TrimRight(strings.TrimPrefix(w, "@"), ",;:!?)\"'")
		p = strings.Trim(p, "\"'(")
		if p == "" {
			continue
		}
		named := hasImageExt(p)
		if !at && !named {
			continue
		}
		fi, err := os.Stat(expandHome(p))
		if err != nil || !fi.Mode().IsRegular() {
			continue // not a file here: words are words
		}
		if at && !named {
			head := make([]byte, 16)
			f, err := os.Open(expandHome(p))
			if err != nil {
				continue
			}
			n, _ := f.Read(head)
			f.Close()
			if blobs.SniffImage(head[:n]) == "" {
				continue // @file of another kind: left to the model's tools
			}
		}
		ref, err := bs.ReadImageFile(ctx, expandHome(p))
		if err != nil {
			return nil, fmt.Errorf("%w (accepted: PNG, JPEG, GIF or WebP up to %d MiB; the message was not sent)", err, blobs.MaxImageBytes>>20)
		}
		refs = append(refs, ref)
	}
	return refs, nil
}

func hasImageExt(p string) bool {
	ext := strings.ToLower(filepath.Ext(p))
	for _, e := range imageExts {
		if ext == e {
			return true
		}
	}
	return false
}

func expandHome(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if h, err := os.UserHomeDir(); err == nil {
			return filepath.Join(h, rest)
		}
	}
	return p
}
