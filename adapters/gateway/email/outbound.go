package email

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"html"
	"io"
	"mime"
	"net"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/emersion/go-message/mail"
	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"

	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/schema"
)

// sendTimeout bounds one SMTP delivery.
const sendTimeout = 60 * time.Second

// Send delivers one outbound message as a mail to the chat's sender:
// reply, notice and approval become mail of text/plain UTF-8
// (quoted-printable), with the Markdown rendered as an HTML alternative, "Re:" and the thread's subject, In-Reply-To the message
// answered and References the thread; typing and deltas are dropped. It
// returns the mail's Message-ID, which is the same on every retry of a
// reply, so a client shows a duplicate once.
func (a *Adapter) Send(ctx context.Context, out schema.Outbound) ([]string, error) {
	switch out.Kind {
	case schema.OutboundTyping, schema.OutboundDelta:
		return nil, nil
	case schema.OutboundReply, schema.OutboundNotice, schema.OutboundApproval:
	default:
		return nil, &gw.PermanentError{Err: fmt.Errorf("email: unknown outbound kind %q", out.Kind)}
	}
	to, root, err := splitChat(out.Chat)
	if err != nil {
		return nil, &gw.PermanentError{Err: err}
	}
	text, files := out.Text, []string(nil)
	if len(a.cfg.MediaRoots) > 0 {
		text, files = a.mediaOf(text)
	}
	text = strings.TrimSpace(text)
	if text == "" && len(files) > 0 {
		text = "(attached)"
	}
	if text == "" {
		return nil, &gw.PermanentError{Err: errors.New("email: an empty message cannot be sent")}
	}
	if out.Kind == schema.OutboundApproval {
		text += "\n\nReply with /approve or /deny."
	}
	parent := out.InReplyTo
	if parent == "" {
		parent = root
	}
	a.mu.Lock()
	th := a.st.Messages[parent]
	a.mu.Unlock()
	subject, refs := "", []string{root}
	if parent != root {
		refs = append(refs, parent)
	}
	if th != nil {
		subject, refs = th.Subject, th.Refs
	}
	id := a.messageID(out)
	raw, err := a.compose(to, id, reSubject(subject), parent, refs, text, files)
	if err != nil {
		return nil, &gw.PermanentError{Err: err}
	}
	if err := a.deliver(ctx, to, raw); err != nil {
		return nil, err
	}
	return []string{id}, nil
}

// messageID names a reply after its ReplyID (the same on every retry),
// anything else at random.
func (a *Adapter) messageID(out schema.Outbound) string {
	_, domain, _ := strings.Cut(a.self, "@")
	seed := out.ReplyID
	if seed == "" {
		seed = strconv.FormatInt(time.Now().UnixNano(), 10) + out.Chat + out.Text
	}
	h := sha256.Sum256([]byte("hermes email\x00" + seed))
	return "<hermes." + hex.EncodeToString(h[:12]) + "@" + domain + ">"
}

// reSubject is a reply's subject: one "Re: " before the thread's subject
// (whatever prefixes it already had), or a plain one for a thread without.
func reSubject(s string) string {
	s = strings.TrimSpace(s)
	for {
		low := strings.ToLower(s)
		switch {
		case strings.HasPrefix(low, "re:"), strings.HasPrefix(low, "aw:"), strings.HasPrefix(low, "sv:"):
			s = strings.TrimSpace(s[3:])
			continue
		}
		break
	}
	if s == "" {
		s = "your message to Hermes"
	}
	return "Re: " + s
}

func (a *Adapter) compose(to, id, subject, inReplyTo string, refs []string, text string, files []string) ([]byte, error) {
	var h mail.Header
	h.SetDate(time.Now())
	h.SetAddressList("From", []*mail.Address{{Name: "Hermes", Address: a.cfg.Address}})
	h.SetAddressList("To", []*mail.Address{{Address: to}})
	h.SetSubject(subject)
	h.SetMessageID(strings.Trim(id, "<>"))
	h.SetMsgIDList("In-Reply-To", []string{strings.Trim(inReplyTo, "<>")})
	ids := make([]string, len(refs))
	for i, r := range refs {
		ids[i] = strings.Trim(r, "<>")
	}
	h.SetMsgIDList("References", ids)
	// RFC 3834: this is an automatic answer; well-behaved robots at the
	// other end will not answer it.
	h.Set("Auto-Submitted", "auto-replied")
	h.Set("X-Mailer", "Hermes")
	var buf bytes.Buffer
	var w *mail.InlineWriter
	var mixed *mail.Writer
	var err error
	if len(files) == 0 {
		w, err = mail.CreateInlineWriter(&buf, h) // multipart/alternative
	} else {
		// multipart/mixed: the text (alternative), then the files.
		if mixed, err = mail.CreateWriter(&buf, h); err == nil {
			w, err = mixed.CreateInline()
		}
	}
	if err != nil {
		return nil, err
	}
	body := strings.ReplaceAll(text, "\r\n", "\n")
	parts := []struct{ ct, body string }{
		{"text/plain", strings.ReplaceAll(body, "\n", "\r\n") + "\r\n"},
		{"text/html", markdownHTML(body)},
	}
	for _, p := range parts {
		var ph mail.InlineHeader
		ph.SetContentType(p.ct, map[string]string{"charset": "utf-8"})
		ph.Set("Content-Transfer-Encoding", "quoted-printable")
		pw, err := w.CreatePart(ph)
		if err != nil {
			return nil, err
		}
		if _, err := io.WriteString(pw, p.body); err != nil {
			return nil, err
		}
		if err := pw.Close(); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	if mixed != nil {
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			var ah mail.AttachmentHeader
			ct := mime.TypeByExtension(filepath.Ext(f))
			if ct == "" {
				ct = http.DetectContentType(data)
			}
			ah.SetContentType(ct, nil)
			ah.SetFilename(filepath.Base(f))
			ah.Set("Content-Transfer-Encoding", "base64")
			aw, err := mixed.CreateAttachment(ah)
			if err != nil {
				return nil, err
			}
			if _, err := aw.Write(data); err != nil {
				return nil, err
			}
			if err := aw.Close(); err != nil {
				return nil, err
			}
		}
		if err := mixed.Close(); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

// markdownHTML renders the answer's Markdown as the simple HTML of the
// mail's alternative part (raw HTML in the answer is left out, not
// passed on).
func markdownHTML(md string) string {
	var b bytes.Buffer
	b.WriteString("<!DOCTYPE html>\r\n<html><head><meta charset=\"utf-8\"></head><body>\r\n")
	if err := markdown.Convert([]byte(md), &b); err != nil {
		b.WriteString("<pre>" + html.EscapeString(md) + "</pre>")
	}
	b.WriteString("</body></html>\r\n")
	return strings.ReplaceAll(strings.ReplaceAll(b.String(), "\r\n", "\n"), "\n", "\r\n")
}

var markdown = goldmark.New(goldmark.WithExtensions(extension.GFM))

// smtpIdle is how long an idle SMTP connection is kept for the next mail.
const smtpIdle = 30 * time.Second

// smtpConn is a logged-in SMTP connection, kept between mails: a new
// connection costs a greeting, EHLO, STARTTLS and AUTH.
type smtpConn struct {
	c    *smtp.Client
	conn net.Conn
	used time.Time
}

func (sc *smtpConn) close() { _ = sc.c.Close() }

// deliver hands raw to the SMTP server over the kept connection, or a new
// one: TLS on port 465, STARTTLS when offered, the password only over TLS
// or to a loopback server (or with Insecure). Refusals (5xx) are
// permanent, other failures retried; a kept connection the server has
// dropped meanwhile is replaced at once.
func (a *Adapter) deliver(ctx context.Context, to string, raw []byte) error {
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	a.smtpMu.Lock()
	defer a.smtpMu.Unlock()
	for {
		sc, fresh := a.smtp, false
		a.smtp = nil
		if sc != nil && time.Since(sc.used) > smtpIdle {
			sc.c.Quit()
			sc.close()
			sc = nil
		}
		if sc == nil {
			var err error
			if sc, err = a.openSMTP(ctx); err != nil {
				return err
			}
			fresh = true
		}
		err := sc.send(ctx, a.cfg.Address, to, raw)
		if err == nil {
			sc.used, a.smtp = time.Now(), sc
			return nil
		}
		sc.close()
		var se *smtp.SMTPError
		if !fresh && (!errors.As(err, &se) || se.Code == 421) {
			continue // the server dropped the kept connection
		}
		return a.smtpErr("send", err)
	}
}

func (sc *smtpConn) send(ctx context.Context, from, to string, raw []byte) error {
	if dl, ok := ctx.Deadline(); ok {
		_ = sc.conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = sc.conn.Close() })
	defer stop()
	if err := sc.c.SendMail(from, []string{to}, bytes.NewReader(raw)); err != nil {
		return err
	}
	return sc.c.Reset()
}

// openSMTP connects and logs in.
func (a *Adapter) openSMTP(ctx context.Context) (*smtpConn, error) {
	addr := net.JoinHostPort(a.cfg.SMTPHost, strconv.Itoa(a.cfg.SMTPPort))
	c, conn, err := a.dialSMTP(ctx, addr)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	fail := func(err error) (*smtpConn, error) {
		c.Close()
		return nil, err
	}
	if ok, _ := c.Extension("AUTH"); ok {
		var sc sasl.Client
		switch {
		case c.SupportsAuth(sasl.Plain):
			sc = sasl.NewPlainClient("", a.cfg.Username, a.cfg.Password)
		case c.SupportsAuth(sasl.Login):
			sc = sasl.NewLoginClient(a.cfg.Username, a.cfg.Password)
		default:
			return fail(&gw.PermanentError{Err: fmt.Errorf("the SMTP server %s offers neither PLAIN nor LOGIN authentication", addr)})
		}
		if err := c.Auth(sc); err != nil {
			var se *smtp.SMTPError
			if errors.As(err, &se) && se.Code >= 500 {
				return fail(&gw.PermanentError{Err: fmt.Errorf("the SMTP server refused the login of %s (%d %s): check EMAIL_PASSWORD", a.cfg.Username, se.Code, se.Message)})
			}
			return fail(a.smtpErr("auth", err))
		}
	}
	return &smtpConn{c: c, conn: conn}, nil
}

// dialSMTP connects and says hello: TLS on port 465; otherwise STARTTLS
// when the server offers it (asked once, then remembered).
func (a *Adapter) dialSMTP(ctx context.Context, addr string) (*smtp.Client, net.Conn, error) {
	d := &net.Dialer{Timeout: 30 * time.Second}
	dial := func() (net.Conn, error) {
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("smtp: %w", err)
		}
		if dl, ok := ctx.Deadline(); ok {
			_ = conn.SetDeadline(dl)
		}
		return conn, nil
	}
	tcfg := a.tlsConfig(a.cfg.SMTPHost)
	conn, err := dial()
	if err != nil {
		return nil, nil, err
	}
	if a.cfg.SMTPPort == 465 {
		tc := tls.Client(conn, tcfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, nil, fmt.Errorf("smtp tls: %w", err)
		}
		c := smtp.NewClient(tc)
		if err := c.Hello(a.heloName()); err != nil {
			c.Close()
			return nil, nil, a.smtpErr("hello", err)
		}
		return c, conn, nil
	}
	if a.smtpStartTLS.Load() == 1 {
		c, err := smtp.NewClientStartTLS(conn, tcfg)
		if err != nil {
			return nil, nil, fmt.Errorf("smtp starttls: %w", err)
		}
		return c, conn, nil
	}
	c := smtp.NewClient(conn)
	if err := c.Hello(a.heloName()); err != nil {
		c.Close()
		return nil, nil, a.smtpErr("hello", err)
	}
	if ok, _ := c.Extension("STARTTLS"); ok {
		c.Close()
		a.smtpStartTLS.Store(1)
		if conn, err = dial(); err != nil {
			return nil, nil, err
		}
		c, err := smtp.NewClientStartTLS(conn, tcfg)
		if err != nil {
			return nil, nil, fmt.Errorf("smtp starttls: %w", err)
		}
		return c, conn, nil
	}
	if !a.cfg.Insecure && !loopback(a.cfg.SMTPHost) {
		c.Close()
		return nil, nil, &gw.PermanentError{Err: fmt.Errorf("the SMTP server %s offers no TLS: use port 465, or set platforms.email.insecure to send the password in the clear", addr)}
	}
	return c, conn, nil
}

func (a *Adapter) heloName() string {
	_, domain, _ := strings.Cut(a.self, "@")
	return domain
}

// smtpErr makes a refusal (5xx) permanent; anything else may pass.
func (a *Adapter) smtpErr(step string, err error) error {
	var se *smtp.SMTPError
	if errors.As(err, &se) && se.Code >= 500 {
		return &gw.PermanentError{Err: fmt.Errorf("smtp %s: %w", step, err)}
	}
	var pe *textproto.Error
	if errors.As(err, &pe) && pe.Code >= 500 {
		return &gw.PermanentError{Err: fmt.Errorf("smtp %s: %w", step, err)}
	}
	return fmt.Errorf("smtp %s: %w", step, err)
}

// maxAttachments bounds the files of one reply, in bytes.
const maxAttachments = 20 << 20

// SendsMedia reports whether the adapter attaches a reply's MEDIA: files
// itself (gateway.MediaSender): when MediaRoots names where from.
func (a *Adapter) SendsMedia() bool { return len(a.cfg.MediaRoots) > 0 }

// mediaOf takes the MEDIA: tags out of text: the files that may be
// attached, and the text with a note for each that may not.
func (a *Adapter) mediaOf(text string) (string, []string) {
	text, paths := gw.SplitMedia(text)
	var files, notes []string
	var total int64
	for _, p := range paths {
		real, err := gw.AllowedMedia(a.cfg.MediaRoots, p)
		if err == nil {
			if fi, serr := os.Stat(real); serr != nil {
				err = serr
			} else if total += fi.Size(); total > maxAttachments {
				err = fmt.Errorf("the reply's files pass %d MiB", maxAttachments>>20)
			}
		}
		if err != nil {
			a.log.Warn().Err(err).Msg("media not attached")
			notes = append(notes, fmt.Sprintf("(%s was not attached: %v)", filepath.Base(p), err))
			continue
		}
		files = append(files, real)
	}
	if len(notes) > 0 {
		text = strings.TrimSpace(text + "\n\n" + strings.Join(notes, "\n"))
	}
	return text, files
}
