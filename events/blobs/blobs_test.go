package blobs_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/blobs"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/schema"
)

// TestMain lets the test binary act as the writer the kill test kills.
func TestMain(m *testing.M) {
	if home := os.Getenv("HERMES_BLOB_HELPER"); home != "" {
		if err := writeForever(home); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	os.Exit(m.Run())
}

// png returns a distinct small "PNG" (the signature and n): enough for
// the sniffing, which is all the store looks at.
func png(n uint64) []byte {
	b := []byte("\x89PNG\r\n\x1a\n")
	b = binary.BigEndian.AppendUint64(b, n)
	return append(b, bytes.Repeat([]byte{byte(n)}, 4096)...)
}

// writeForever does what every front door does, in a loop: store the
// image, then append the event naming it, and print the hash once the
// append is acknowledged.
func writeForever(home string) error {
	st, err := embedded.Open(filepath.Join(home, "events.db"))
	if err != nil {
		return err
	}
	bs := blobs.Open(home)
	out := bufio.NewWriter(os.Stdout)
	ctx := context.Background()
	for i := uint64(0); ; i++ {
		ref, err := bs.PutImage(ctx, png(i), "shot.png")
		if err != nil {
			return err
		}
		ev := schema.MustEnvelope(schema.Meta{SessionID: "s"}, schema.UserMessageAdded{Content: "look", Images: []schema.ImageRef{ref}})
		if _, err := st.Append(ctx, events.SessionStream("s"), events.Any, ev); err != nil {
			return err
		}
		fmt.Fprintln(out, ref.SHA256)
		out.Flush()
	}
}

// TestKillBetweenBlobAndEvent kills a writer mid-loop, again and again:
// every event acknowledged is in the log, and every blob any event in the
// log names is on disk whole.
func TestKillBetweenBlobAndEvent(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	home := t.TempDir()
	var acked []string
	for round := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "HERMES_BLOB_HELPER="+home)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		deadline := time.Now().Add(time.Duration(150+100*round) * time.Millisecond)
		for sc.Scan() {
			acked = append(acked, sc.Text())
			if time.Now().After(deadline) {
				break
			}
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
		for sc.Scan() {
			acked = append(acked, sc.Text())
		}
		_ = cmd.Wait()
		if strings.TrimSpace(stderr.String()) != "" {
			t.Fatalf("writer failed: %s", stderr.String())
		}
	}
	if len(acked) == 0 {
		t.Fatal("the writer acknowledged nothing")
	}
	st, err := embedded.Open(filepath.Join(home, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	recs, err := st.ReadStream(context.Background(), events.SessionStream("s"), events.Forward, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	bs := blobs.Open(home)
	inLog := map[string]bool{}
	for _, r := range recs {
		p, err := schema.Decode(r.Envelope)
		if err != nil {
			t.Fatal(err)
		}
		for _, ref := range p.(schema.UserMessageAdded).Images {
			inLog[ref.SHA256] = true
			data, err := bs.ReadImage(context.Background(), ref)
			if err != nil {
				t.Fatalf("event %d names a blob that is not whole on disk: %v", r.Revision, err)
			}
			if int64(len(data)) != ref.Size {
				t.Fatalf("blob %s has %d bytes, the event says %d", ref.SHA256, len(data), ref.Size)
			}
		}
	}
	for _, sum := range acked {
		if !inLog[sum] {
			t.Fatalf("acknowledged image %s is not in the log", sum)
		}
	}
	t.Logf("%d acknowledged, %d events in the log", len(acked), len(recs))
}

func TestPutGetIsContentAddressed(t *testing.T) {
	bs := blobs.Open(t.TempDir())
	ctx := context.Background()
	img := png(7)
	ref, err := bs.PutImage(ctx, img, "/tmp/dir/shot.png")
	if err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256(img)
	if ref.SHA256 != hex.EncodeToString(want[:]) || ref.MediaType != "image/png" || ref.Size != int64(len(img)) || ref.Name != "shot.png" {
		t.Fatalf("ref = %+v", ref)
	}
	if p := bs.Path(ref.SHA256); p != filepath.Join(bs.Dir(), "sha256", ref.SHA256[:2], ref.SHA256[2:]) {
		t.Fatalf("path = %s", p)
	}
	again, err := bs.PutImage(ctx, img, "other.png")
	if err != nil || again.SHA256 != ref.SHA256 {
		t.Fatalf("second put: %+v %v", again, err)
	}
	got, err := bs.ReadImage(ctx, ref)
	if err != nil || !bytes.Equal(got, img) {
		t.Fatalf("read back %d bytes, %v", len(got), err)
	}
	// A blob whose bytes changed on disk is refused, not sent.
	if err := os.WriteFile(bs.Path(ref.SHA256), append(img, 'x'), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := bs.ReadImage(ctx, ref); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("damaged blob read: %v", err)
	}
	if _, err := bs.Get(ctx, strings.Repeat("0", 64)); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing blob read: %v", err)
	}
	if _, err := bs.Get(ctx, "../../etc/passwd"); err == nil {
		t.Fatal("a path was accepted as a hash")
	}
}

func TestImageRefusals(t *testing.T) {
	home := t.TempDir()
	bs := blobs.Open(home)
	ctx := context.Background()
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"notes.png", []byte("just some text pretending to be a png"), blobs.ErrNotImage},
		{"big.png", append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, blobs.MaxImageBytes)...), blobs.ErrTooLarge},
		{"doc.pdf", []byte("%PDF-1.7\n"), blobs.ErrNotImage},
	}
	for _, c := range cases {
		_, err := bs.PutImage(ctx, c.data, c.name)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.name) {
			t.Errorf("%s: err = %v, want %v naming the file", c.name, err, c.want)
		}
	}
	if _, err := os.Stat(bs.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused image left something on disk: %v", err)
	}
	for _, c := range []struct {
		data []byte
		want string
	}{
		{[]byte{0xff, 0xd8, 0xff, 0xe0}, "image/jpeg"},
		{[]byte("GIF89a...."), "image/gif"},
		{[]byte("RIFF\x00\x00\x00\x00WEBPVP8 "), "image/webp"},
		{[]byte("RIFF\x00\x00\x00\x00WAVEfmt "), ""},
	} {
		if got := blobs.SniffImage(c.data); got != c.want {
			t.Errorf("sniff %q = %q, want %q", c.data, got, c.want)
		}
	}
	// A file over the limit is refused before it is read whole.
	big := filepath.Join(home, "big.jpg")
	f, _ := os.Create(big)
	_ = f.Truncate(blobs.MaxImageBytes + 10)
	f.Close()
	if _, err := bs.ReadImageFile(ctx, big); !errors.Is(err, blobs.ErrTooLarge) {
		t.Fatalf("big file: %v", err)
	}
}
