// Package blobs keeps the bytes events refer to but do not carry (the
// images a person sends), once each, content-addressed, in the home beside
// the event log: $HERMES_HOME/blobs/sha256/ab/cdef… for the blob whose
// SHA-256 is abcdef….
//
// A blob is written to a temporary file, synced and renamed into place, and
// its directory synced, before Put returns: an event naming the blob is
// appended only after Put, so a kill between the two leaves at worst an
// unreferenced blob, never an event whose bytes are missing.
package blobs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hermes-go/hermes/schema"
)

// MaxImageBytes is the largest image accepted (20 MiB, the most the
// hosted vision APIs take in one request).
const MaxImageBytes = 20 << 20

// ErrNotImage is returned for bytes that are not a PNG, JPEG, GIF or WebP
// image.
var ErrNotImage = errors.New("not a PNG, JPEG, GIF or WebP image")

// ErrTooLarge is returned for an image over MaxImageBytes.
var ErrTooLarge = fmt.Errorf("image larger than %d MiB", MaxImageBytes>>20)

// Store is the blob directory of one home.
type Store struct {
	dir string
}

// Open returns the blob store under home (the directory is created on the
// first Put).
func Open(home string) *Store {
	return &Store{dir: filepath.Join(home, "blobs")}
}

// Dir is the store's root directory.
func (s *Store) Dir() string { return s.dir }

// Path is where the blob with this SHA-256 (lower-case hex) is kept.
func (s *Store) Path(sum string) string {
	if len(sum) < 3 {
		return filepath.Join(s.dir, "sha256", sum)
	}
	return filepath.Join(s.dir, "sha256", sum[:2], sum[2:])
}

// SniffImage returns the media type of an image from its first bytes, or
// "" when they are not one of the accepted formats. The file name is never
// looked at.
func SniffImage(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(b, []byte{0xff, 0xd8, 0xff}):
		return "image/jpeg"
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return "image/gif"
	case len(b) >= 12 && bytes.Equal(b[:4], []byte("RIFF")) && bytes.Equal(b[8:12], []byte("WEBP")):
		return "image/webp"
	}
	return ""
}

// CheckImage says whether data may be sent as an image: its media type by
// sniffing, or an error naming the limit it breaks.
func CheckImage(data []byte) (string, error) {
	if len(data) > MaxImageBytes {
		return "", fmt.Errorf("%w (%.1f MiB)", ErrTooLarge, float64(len(data))/(1<<20))
	}
	mt := SniffImage(data)
	if mt == "" {
		return "", ErrNotImage
	}
	return mt, nil
}

// PutImage checks data as an image (size, type by its bytes) and stores
// it; name is kept in the reference for people only.
func (s *Store) PutImage(ctx context.Context, data []byte, name string) (schema.ImageRef, error) {
	mt, err := CheckImage(data)
	if err != nil {
		if name != "" {
			return schema.ImageRef{}, fmt.Errorf("%s: %w", name, err)
		}
		return schema.ImageRef{}, err
	}
	sum, err := s.Put(ctx, data)
	if err != nil {
		return schema.ImageRef{}, err
	}
	return schema.ImageRef{SHA256: sum, MediaType: mt, Size: int64(len(data)), Name: filepath.Base(name)}, nil
}

// ReadImageFile reads an image file from disk, refusing one over the
// limit before reading it whole, and stores it.
func (s *Store) ReadImageFile(ctx context.Context, path string) (schema.ImageRef, error) {
	f, err := os.Open(path)
	if err != nil {
		return schema.ImageRef{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxImageBytes+1))
	if err != nil {
		return schema.ImageRef{}, fmt.Errorf("read %s: %w", path, err)
	}
	return s.PutImage(ctx, data, path)
}

// Put stores data and returns its SHA-256. It is durable when Put returns;
// bytes already stored are not written again.
func (s *Store) Put(ctx context.Context, data []byte) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	h := sha256.Sum256(data)
	sum := hex.EncodeToString(h[:])
	dst := s.Path(sum)
	if fi, err := os.Stat(dst); err == nil && fi.Size() == int64(len(data)) {
		return sum, nil
	}
	dir := filepath.Dir(dst)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("blob store: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return "", fmt.Errorf("blob store: %w", err)
	}
	name := tmp.Name()
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(name)
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return "", fmt.Errorf("blob store: write %s: %w", sum, err)
	}
	if err := tmp.Sync(); err != nil {
		return "", fmt.Errorf("blob store: sync %s: %w", sum, err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("blob store: %w", err)
	}
	if err := os.Rename(name, dst); err != nil {
		return "", fmt.Errorf("blob store: %w", err)
	}
	ok = true
	// The new name, and the directories MkdirAll may have made, are
	// durable only once each parent directory is synced.
	for _, d := range []string{dir, filepath.Dir(dir), s.dir, filepath.Dir(s.dir)} {
		if err := syncDir(d); err != nil {
			return "", fmt.Errorf("blob store: sync %s: %w", d, err)
		}
	}
	return sum, nil
}

// Get returns the bytes of the blob with this SHA-256, checking them
// against it.
func (s *Store) Get(_ context.Context, sum string) ([]byte, error) {
	if !validSum(sum) {
		return nil, fmt.Errorf("blob store: %q is not a SHA-256", sum)
	}
	data, err := os.ReadFile(s.Path(sum))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("blob %s is missing from %s: %w", sum, s.dir, err)
		}
		return nil, err
	}
	h := sha256.Sum256(data)
	if hex.EncodeToString(h[:]) != sum {
		return nil, fmt.Errorf("blob %s is damaged: its bytes no longer hash to its name", sum)
	}
	return data, nil
}

// ReadImage returns the bytes of an image reference (it implements
// model.Blobs).
func (s *Store) ReadImage(ctx context.Context, ref schema.ImageRef) ([]byte, error) {
	return s.Get(ctx, ref.SHA256)
}

// Has says whether the blob is stored.
func (s *Store) Has(sum string) bool {
	if !validSum(sum) {
		return false
	}
	_, err := os.Stat(s.Path(sum))
	return err == nil
}

func validSum(sum string) bool {
	if len(sum) != 64 || strings.ToLower(sum) != sum {
		return false
	}
	_, err := hex.DecodeString(sum)
	return err == nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}
