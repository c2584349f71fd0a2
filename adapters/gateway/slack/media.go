package slack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/slack-go/slack"

	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/schema"
)

// A reply's files: the MEDIA:<path> tags its answer carries (what
// image_generate and text_to_speech make) are taken out of the text, and
// each file under MediaRoots is uploaded into the reply's thread after the
// text, with Slack's external upload flow (files.getUploadURLExternal, the
// bytes POSTed to the URL it returns, files.completeUploadExternal sharing
// it to the channel and thread). A path elsewhere is never read: the text
// says it was not sent.

// maxUpload bounds a file uploaded with a reply (Slack takes up to 1 GB;
// what Hermes makes is far smaller, and a bigger file is more likely a
// wrong path than a picture).
const maxUpload = 100 << 20

// uploadTimeout bounds one file's three upload calls.
const uploadTimeout = 3 * callTimeout

// SendsMedia reports whether the adapter uploads a reply's MEDIA: files
// itself (gateway.MediaSender): when MediaRoots names where from.
func (a *Adapter) SendsMedia() bool { return len(a.cfg.MediaRoots) > 0 }

// mediaOf takes the MEDIA: tags out of text: the files that may be
// uploaded, and the text with a note for each that may not.
func (a *Adapter) mediaOf(text string) (string, []string) {
	text, paths := gw.SplitMedia(text)
	var files, notes []string
	for _, p := range paths {
		real, err := gw.AllowedMedia(a.cfg.MediaRoots, p)
		if err == nil {
			var fi os.FileInfo
			if fi, err = os.Stat(real); err == nil {
				switch {
				case fi.Size() == 0:
					err = errors.New("the file is empty")
				case fi.Size() > maxUpload:
					err = fmt.Errorf("the file is %d bytes, more than the %d uploaded", fi.Size(), maxUpload)
				}
			}
		}
		if err != nil {
			a.log.Warn().Err(err).Msg("media not sent")
			notes = append(notes, fmt.Sprintf("(%s was not sent: %v)", filepath.Base(p), err))
			continue
		}
		files = append(files, real)
	}
	if len(notes) > 0 {
		text = strings.TrimSpace(text + "\n\n" + strings.Join(notes, "\n"))
	}
	return text, files
}

// upload uploads a reply's files into its thread, from the first not
// uploaded by an earlier attempt. A failure worth retrying keeps what went
// (the text's parts in sent, the files counted in uploaded) so that the
// retry sends only the rest; success or a permanent failure forgets it,
// unless edited says the text was edited into a preview: the gateway then
// sends the reply after a permanent failure (Served.replace), and that
// send must post nothing, nor upload anything, again.
//
// A reply whose files all went is remembered with ids, its text's
// messages (delivered): the same reply sent again (an outbox redelivery)
// posts and uploads nothing, and answers ids again.
func (a *Adapter) upload(ctx context.Context, out schema.Outbound, files, ids []string, edited bool) error {
	done := 0
	if out.ReplyID != "" {
		a.mu.Lock()
		done = a.uploaded[out.ReplyID]
		a.mu.Unlock()
	}
	for i := done; i < len(files); i++ {
		if err := a.uploadFile(ctx, out, files[i]); err != nil {
			var perm *gw.PermanentError
			if out.ReplyID != "" && (edited || !errors.As(err, &perm)) {
				a.mu.Lock()
				a.uploaded[out.ReplyID] = i
				a.mu.Unlock()
			} else {
				a.forget(out.ReplyID)
			}
			return err
		}
	}
	a.forget(out.ReplyID)
	if out.ReplyID != "" && len(files) > 0 {
		a.mu.Lock()
		if _, ok := a.delivered[out.ReplyID]; !ok {
			a.deliveredOrder = append(a.deliveredOrder, out.ReplyID)
		}
		a.delivered[out.ReplyID] = ids
		for len(a.deliveredOrder) > maxRemembered {
			delete(a.delivered, a.deliveredOrder[0])
			a.deliveredOrder = a.deliveredOrder[1:]
		}
		a.mu.Unlock()
	}
	return nil
}

// wasDelivered returns the ids of reply's text when it and its files all
// went already.
func (a *Adapter) wasDelivered(reply string) ([]string, bool) {
	if reply == "" {
		return nil, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	ids, ok := a.delivered[reply]
	return ids, ok
}

// forget drops what was remembered of reply's delivery.
func (a *Adapter) forget(reply string) {
	if reply == "" {
		return
	}
	a.mu.Lock()
	delete(a.sent, reply)
	delete(a.uploaded, reply)
	a.mu.Unlock()
}

// uploadFile uploads the file at path to out's channel and thread.
func (a *Adapter) uploadFile(ctx context.Context, out schema.Outbound, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return &gw.PermanentError{Err: err}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return &gw.PermanentError{Err: err}
	}
	name := filepath.Base(path)
	cctx, cancel := context.WithTimeout(ctx, uploadTimeout)
	defer cancel()
	_, err = a.api.UploadFileContext(cctx, slack.UploadFileParameters{Reader: f, FileSize: int(fi.Size()), Filename: name, Title: name,
		Channel: out.Chat, ThreadTimestamp: out.Thread})
	if err != nil {
		return a.classify(fmt.Errorf("slack: upload %s: %w", name, err))
	}
	return nil
}
