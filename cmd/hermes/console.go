package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/tui"
)

// console is the terminal side of a chat: it owns standard input, so that
// a tool's question (clarify, approval) and the next chat message never
// race for the same line. It is the CLI's tool.Asker.
type console struct {
	errw      io.Writer
	lines     chan string
	questions chan *pending
}

type pending struct {
	ctx   context.Context
	q     tool.Question
	reply chan string
	// gone is closed when nobody can answer (standard input ended).
	gone chan struct{}
}

func newConsole(in io.Reader, errw io.Writer) *console {
	c := &console{errw: errw, lines: make(chan string), questions: make(chan *pending)}
	go c.read(bufio.NewReaderSize(in, 64<<10))
	return c
}

// maxLine bounds one input line (a pasted file is a long line): a longer
// one is refused, said so, and the chat goes on with the next.
const maxLine = 16 << 20

// read sends stdin's lines, without their line ends, until it ends.
func (c *console) read(r *bufio.Reader) {
	defer close(c.lines)
	var line []byte
	over := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !over {
			if len(line)+len(chunk) > maxLine+2 { // +2: the line end
				over, line = true, line[:0]
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if over {
			fmt.Fprintf(c.errw, "\nerror: an input line over %d MiB was not sent; send a shorter message, or put the text in a file and name the file\n", maxLine>>20)
			over = false
		} else if err == nil || len(line) > 0 {
			c.lines <- strings.TrimSuffix(strings.TrimSuffix(string(line), "\n"), "\r")
		}
		line = line[:0]
		if cap(line) > 1<<20 {
			line = nil // do not keep a pasted file's worth of memory
		}
		if err != nil {
			return
		}
	}
}

// Ask implements tool.Asker.
func (c *console) Ask(ctx context.Context, q tool.Question) (string, error) {
	p := &pending{ctx: ctx, q: q, reply: make(chan string, 1), gone: make(chan struct{})}
	select {
	case c.questions <- p:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	select {
	case a := <-p.reply:
		return a, nil
	case <-p.gone:
		what := "the question"
		if q.Kind == tool.QuestionApproval {
			what = "the command is denied; to allow it without a question, run with --yolo or grant its rule (hermes approvals add RULE)"
		}
		fmt.Fprintf(c.errw, "\n? %s\n  no answer is possible: standard input is not a terminal and has ended: %s\n", q.Text, what)
		return "", tool.ErrNoAsker
	case <-ctx.Done():
		fmt.Fprintln(c.errw, "\n(no answer in time)")
		return "", ctx.Err()
	}
}

func (c *console) show(p *pending) {
	fmt.Fprintf(c.errw, "\n? %s\n", p.q.Text)
	if len(p.q.Choices) > 0 {
		fmt.Fprintf(c.errw, "  [%s] › ", strings.Join(p.q.Choices, " / "))
	} else {
		fmt.Fprint(c.errw, "  › ")
	}
}

// answer routes line to p when p still waits; false when it gave up.
func answer(p *pending, line string) bool {
	if p.ctx.Err() != nil {
		return false
	}
	p.reply <- strings.TrimSpace(line)
	return true
}

// understood reports whether line answers p: an approval takes one of its
// choices (or its first letter, yes or no); anything else is asked again,
// never taken as a refusal or a consent by accident.
func understood(p *pending, line string) bool {
	return tui.Understood(p.q, line)
}

// reask shows p again after an answer it could not take.
func (c *console) reask(p *pending, line string) {
	fmt.Fprintf(c.errw, "  %q is not an answer: type one of %s\n", strings.TrimSpace(line), strings.Join(p.q.Choices, ", "))
	c.show(p)
}

// serveQuestions answers questions from stdin while no chat loop runs
// (chat -q); it stops with ctx.
func (c *console) serveQuestions(ctx context.Context) {
	closed := false
	for {
		select {
		case <-ctx.Done():
			return
		case p := <-c.questions:
			if closed {
				close(p.gone)
				continue
			}
			c.show(p)
		read:
			select {
			case line, ok := <-c.lines:
				if !ok {
					closed = true
					close(p.gone)
					break
				}
				if !understood(p, line) {
					c.reask(p, line)
					goto read
				}
				answer(p, line)
			case <-p.ctx.Done():
			case <-ctx.Done():
				return
			}
		}
	}
}
