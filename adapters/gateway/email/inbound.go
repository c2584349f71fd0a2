package email

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/mail"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-message"
	_ "github.com/emersion/go-message/charset" // decode the legacy charsets mail still uses
	gomail "github.com/emersion/go-message/mail"

	"github.com/hermes-go/hermes/schema"
)

// parsed is one message as the adapter reads it.
type parsed struct {
	uid      imap.UID
	validity uint32
	header   gomail.Header
	// id is the Message-ID, in angle brackets.
	id        string
	from      string // the sender's address, lower case
	name      string // the sender's display name
	subject   string
	refs      []string // References, or In-Reply-To when there are none
	text      string   // the text/plain body (the first one)
	html      string   // the text/html body (the first one)
	reportish bool     // multipart/report: a delivery or read report
	broken    error    // the body could not be read to its end
	files     []file
}

// file is one attachment.
type file struct {
	name, mime string
	data       []byte
	tooBig     bool
}

// parse reads a raw message.
func (a *Adapter) parse(raw []byte, validity uint32, uid imap.UID) (*parsed, error) {
	mr, err := gomail.CreateReader(bytes.NewReader(raw))
	if err != nil && !message.IsUnknownCharset(err) {
		return nil, fmt.Errorf("mail: %w", err)
	}
	defer mr.Close()
	h := mr.Header
	m := &parsed{uid: uid, validity: validity, header: h}
	from, err := h.AddressList("From")
	if err != nil || len(from) == 0 {
		return nil, errors.New("mail has no readable From")
	}
	addr, ok := normAddress(from[0].Address)
	if !ok {
		return nil, fmt.Errorf("mail from %q: not an address", from[0].Address)
	}
	m.from, m.name = addr, strings.TrimSpace(from[0].Name)
	if id, err := h.MessageID(); err == nil && id != "" {
		m.id = "<" + id + ">"
	} else {
		// Without a Message-ID nothing can reply to it by id: one that is
		// stable across restarts stands in.
		m.id = fmt.Sprintf("<%d.%d@hermes.invalid>", validity, uid)
	}
	m.subject, _ = h.Subject()
	refs, _ := h.MsgIDList("References")
	if len(refs) == 0 {
		refs, _ = h.MsgIDList("In-Reply-To")
	}
	for _, r := range refs {
		m.refs = append(m.refs, "<"+r+">")
	}
	if ct, _, err := h.ContentType(); err == nil && ct == "multipart/report" {
		m.reportish = true
	}
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if message.IsUnknownCharset(err) {
				continue
			}
			// What was read may still be worth answering.
			m.broken = fmt.Errorf("mail body: %w", err)
			break
		}
		switch ph := p.Header.(type) {
		case *gomail.InlineHeader:
			ct, params, _ := ph.ContentType()
			switch {
			case ct == "text/plain" && m.text == "":
				b, _ := io.ReadAll(io.LimitReader(p.Body, MaxMessage))
				m.text = string(b)
			case ct == "text/html" && m.html == "":
				b, _ := io.ReadAll(io.LimitReader(p.Body, MaxMessage))
				m.html = string(b)
			case strings.HasPrefix(ct, "text/"):
				// a second body (a text part of a mixed message): ignored
			default:
				// An inline image and the like: an attachment all the same.
				name := params["name"]
				m.files = append(m.files, a.readFile(p.Body, name, ct))
			}
		case *gomail.AttachmentHeader:
			name, _ := ph.Filename()
			ct, _, _ := ph.ContentType()
			m.files = append(m.files, a.readFile(p.Body, name, ct))
		}
	}
	return m, nil
}

func (a *Adapter) readFile(r io.Reader, name, ct string) file {
	data, _ := io.ReadAll(io.LimitReader(r, a.cfg.MaxAttachment+1))
	f := file{name: name, mime: ct, data: data}
	if int64(len(data)) > a.cfg.MaxAttachment {
		f.data, f.tooBig = nil, true
	}
	return f
}

// skip says why a message must not be answered, or "" when it may:
// replies to automatic mail are how mail loops start.
func (a *Adapter) skip(m *parsed) string {
	h := m.header
	local, _, _ := strings.Cut(m.from, "@")
	switch {
	case m.from == a.self:
		return "our own mail"
	case local == "mailer-daemon" || local == "postmaster" || local == "noreply" || local == "no-reply" || local == "donotreply":
		return "sent by " + local
	case m.reportish:
		return "a delivery report"
	}
	if v := strings.ToLower(strings.TrimSpace(h.Get("Auto-Submitted"))); v != "" && v != "no" {
		return "Auto-Submitted: " + v
	}
	for _, k := range []string{"X-Autoreply", "X-Autorespond", "X-Auto-Reply"} {
		if strings.TrimSpace(h.Get(k)) != "" {
			return k
		}
	}
	switch p := strings.ToLower(strings.TrimSpace(h.Get("Precedence"))); p {
	case "bulk", "junk", "list", "auto_reply":
		return "Precedence: " + p
	}
	for _, k := range []string{"List-Id", "List-Unsubscribe", "List-Post"} {
		if h.Get(k) != "" {
			return k
		}
	}
	if rp := strings.TrimSpace(h.Get("Return-Path")); rp == "<>" {
		return "a bounce (empty Return-Path)"
	}
	return ""
}

// chatID is the chat of a message: its sender and its thread's root.
func chatID(from, root string) string { return from + " " + root }

// splitChat undoes chatID.
func splitChat(chat string) (from, root string, err error) {
	i := strings.LastIndex(chat, " <")
	if i <= 0 || !strings.HasSuffix(chat, ">") {
		return "", "", fmt.Errorf("email: %q is not a chat of this adapter (address <root message id>)", chat)
	}
	return chat[:i], chat[i+1:], nil
}

func (m *parsed) root() string {
	if len(m.refs) > 0 {
		return m.refs[0]
	}
	return m.id
}

// inbound maps a message for the router: its text (HTML converted,
// quoted history cut), the subject when it starts a thread, and notes
// naming the attachments saved.
func (a *Adapter) inbound(m *parsed) (schema.Inbound, error) {
	body := m.text
	if strings.TrimSpace(body) == "" && m.html != "" {
		body = HTMLText(m.html)
	}
	body = StripQuoted(body)
	var b strings.Builder
	// A new thread's subject is part of what was asked (unless the mail
	// is a command, which must come first).
	if len(m.refs) == 0 && strings.TrimSpace(m.subject) != "" && !strings.HasPrefix(strings.TrimSpace(body), "/") {
		fmt.Fprintf(&b, "Subject: %s\n\n", strings.TrimSpace(m.subject))
	}
	b.WriteString(strings.TrimSpace(body))
	var atts []schema.Attachment
	for i, f := range m.files {
		att, err := a.save(m, i, f)
		desc := "file"
		if f.name != "" {
			desc = "file " + strconv.Quote(f.name)
		}
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		if err != nil {
			a.log.Warn().Err(err).Str("name", f.name).Msg("attachment not saved")
			fmt.Fprintf(&b, "\n[attached %s: not saved: %v]", desc, err)
			continue
		}
		atts = append(atts, att)
		fmt.Fprintf(&b, "\n[attached %s (%s): %s]", desc, att.MimeType, att.Path)
	}
	return schema.Inbound{
		Platform:    Platform,
		Chat:        chatID(m.from, m.root()),
		ChatType:    "dm",
		User:        m.from,
		UserName:    m.name,
		MessageID:   m.id,
		Text:        strings.TrimSpace(b.String()),
		Attachments: atts,
	}, nil
}

// save writes an attachment into CacheDir (only once: a message handed on
// twice reuses the file).
func (a *Adapter) save(m *parsed, i int, f file) (schema.Attachment, error) {
	if f.tooBig {
		return schema.Attachment{}, fmt.Errorf("over the %d-byte limit", a.cfg.MaxAttachment)
	}
	if a.cfg.CacheDir == "" {
		return schema.Attachment{}, errors.New("no cache directory configured")
	}
	ct := f.mime
	if ct == "" {
		ct = "application/octet-stream"
	}
	name := safeName(filepath.Base(f.name))
	if name == "" || name == "." {
		name = "attachment"
		if exts, _ := mime.ExtensionsByType(ct); len(exts) > 0 {
			name += exts[0]
		}
	}
	dst, err := filepath.Abs(filepath.Join(a.cfg.CacheDir, fmt.Sprintf("%d-%d-%d-%s", m.validity, m.uid, i, name)))
	if err != nil {
		return schema.Attachment{}, err
	}
	att := schema.Attachment{Kind: kind(ct), Path: dst, Name: f.name, MimeType: ct, Size: int64(len(f.data))}
	if _, err := os.Stat(dst); err == nil {
		return att, nil
	}
	if err := os.MkdirAll(a.cfg.CacheDir, 0o700); err != nil {
		return schema.Attachment{}, err
	}
	tmp, err := os.CreateTemp(a.cfg.CacheDir, ".save-*")
	if err != nil {
		return schema.Attachment{}, err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(f.data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return schema.Attachment{}, err
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return schema.Attachment{}, err
	}
	return att, nil
}

func kind(ct string) string {
	switch {
	case strings.HasPrefix(ct, "image/"):
		return "photo"
	case strings.HasPrefix(ct, "audio/"):
		return "audio"
	case strings.HasPrefix(ct, "video/"):
		return "video"
	}
	return "document"
}

// remember keeps what a reply to m needs: its thread's subject and the
// References the reply carries.
func (a *Adapter) remember(m *parsed) {
	refs := trimRefs(append(append([]string(nil), m.refs...), m.id))
	a.mu.Lock()
	defer a.mu.Unlock()
	a.st.put(m.id, &thread{Subject: m.subject, Refs: refs})
	if err := a.st.save(); err != nil {
		a.log.Warn().Err(err).Msg("email state not saved")
	}
}

// normAddress is an address as the allow-lists compare it: the addr-spec
// alone (never the display name), in lower case.
func normAddress(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", false
	}
	if p, err := mail.ParseAddress(s); err == nil {
		s = p.Address
	}
	local, domain, ok := strings.Cut(s, "@")
	if !ok || local == "" || domain == "" || strings.ContainsAny(s, " <>") {
		return "", false
	}
	return strings.ToLower(s), true
}

// NormAddress is the form of an address that EMAIL_ALLOWED_USERS entries
// are compared in: the address alone, lower case ("" when s is none).
func NormAddress(s string) string {
	n, _ := normAddress(s)
	return n
}

// safeName keeps the characters that are safe in a file name.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return -1
	}, s)
}
