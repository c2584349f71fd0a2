package browser

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/adapters/sandbox"
)

// EnvChromium names the variable that points at the browser to run.
const EnvChromium = "HERMES_CHROMIUM"

// HowToEnable says what to install or set when no Chromium is found, for
// `hermes tools list` and the error a browser tool gives.
const HowToEnable = "browser tools are off: no Chromium found; install it (Debian/Ubuntu: apt-get install chromium) " +
	"or set HERMES_CHROMIUM to the path of a Chromium or Chrome binary"

// ErrNoChromium is returned when no browser binary can be found.
var ErrNoChromium = errors.New(HowToEnable)

// candidates are the names a Chromium-family browser is installed under.
var candidates = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome", "headless_shell"}

// FindChromium returns the browser to run: path when set, else
// $HERMES_CHROMIUM, else the first of the usual names on PATH.
func FindChromium(path string) (string, error) {
	if path == "" {
		path = os.Getenv(EnvChromium)
	}
	if path != "" {
		p, err := exec.LookPath(path)
		if err != nil {
			return "", fmt.Errorf("chromium %s: %w (%s)", path, err, HowToEnable)
		}
		return p, nil
	}
	for _, n := range candidates {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", ErrNoChromium
}

// flags are the switches every browser here starts with: headless, no
// first-run chores, nothing that phones home on its own.
func flags() []string {
	return []string{
		"--headless=new", "--no-first-run", "--no-default-browser-check",
		"--disable-background-networking", "--disable-breakpad", "--disable-sync",
		"--disable-extensions", "--disable-default-apps", "--disable-component-update",
		"--disable-client-side-phishing-detection", "--disable-dev-shm-usage",
		"--disable-features=Translate,MediaRouter,OptimizationHints",
		"--metrics-recording-only", "--mute-audio", "--password-store=basic", "--use-mock-keychain",
		"--hide-scrollbars", "--window-size=1280,900", "--force-color-profile=srgb",
	}
}

// markEnv is set in every browser's environment, which its helper
// processes inherit: it tells this process's browsers from any other
// Chromium on the machine (leak checks, memory figures).
const markEnv = "HERMES_BROWSER_MARK"

// launched is one running browser process and how to end it.
type launched struct {
	// ctx is the chromedp context of the browser's first tab.
	ctx    context.Context
	cancel context.CancelFunc
	// pid is the browser's process on this host (0 where the pid is in
	// another pid namespace).
	pid int
	// lost is closed when the connection to the browser drops.
	lost <-chan struct{}
	// downloads is where the browser saves files, as the browser sees it,
	// and shown is the same directory as the session's terminal sees it.
	downloads, shown string
	// stop ends the process and frees what it held; it waits for the
	// process to be gone.
	stop func()
}

// launchDirect starts chromium as a child of this process, unconfined
// apart from Chromium's own sandbox where it can have one, with env as its
// environment (nil: this process's).
func launchDirect(parent context.Context, chromium, downloads, mark string, env []string) (*launched, error) {
	if err := os.MkdirAll(downloads, 0o700); err != nil {
		return nil, err
	}
	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(chromium), chromedp.CombinedOutput(io.Discard)}
	if env != nil {
		opts = append(opts, chromedp.NoInheritEnv, chromedp.Env(env...))
	}
	opts = append(opts, chromedp.Env(markEnv+"="+mark))
	for _, f := range flags() {
		name, val, hasVal := strings.Cut(strings.TrimPrefix(f, "--"), "=")
		if hasVal {
			opts = append(opts, chromedp.Flag(name, val))
		} else {
			opts = append(opts, chromedp.Flag(name, true))
		}
	}
	actx, acancel := chromedp.NewExecAllocator(context.WithoutCancel(parent), opts...)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithLogf(func(string, ...any) {}), chromedp.WithErrorf(func(string, ...any) {}))
	if err := start(parent, ctx, func() { cancel(); acancel() }); err != nil {
		return nil, fmt.Errorf("start %s: %w", chromium, err)
	}
	c := chromedp.FromContext(ctx)
	l := &launched{ctx: ctx, cancel: cancel, lost: c.Browser.LostConnection, downloads: downloads, shown: downloads}
	if p := c.Browser.Process(); p != nil {
		l.pid = p.Pid
	}
	l.stop = func() {
		tctx, tcancel := context.WithTimeout(context.Background(), 5*time.Second)
		chromedp.Cancel(tctx) // closes the browser gracefully, else kills it
		tcancel()
		cancel()
		acancel() // waits for the process and removes its profile
	}
	return l, nil
}

// launchSandboxed starts chromium in the session's sandbox (the
// terminal's): its namespaces, Landlock rules and seccomp filter hold the
// whole browser, so Chromium's own sandbox, which needs the namespaces
// ours takes away, is off. The DevTools protocol runs over two pipes
// handed in as the browser's descriptors 3 and 4, so nothing listens on a
// port.
//
// Where the session's network is off or filtered, the sandbox's seccomp
// filter refuses to make Unix sockets (a daemon's socket would be a way
// out), and Chromium cannot start without one (its profile lock is one).
// The browser then gets a sandbox of its own with the session's policy
// and /tmp but this machine's network, and every request it makes,
// loopback ones too, goes to a proxy that lets through only the allowed
// hosts (none when the network is off); direct name lookups and WebRTC's
// UDP are turned off. The walls on files, processes and system calls are
// the kernel's as for the terminal; the network filter is the browser's
// proxy setting, which a page cannot change but an exploit of the
// browser itself could get around.
func launchSandboxed(parent context.Context, sb *sandbox.Sandbox, env []string, chromium, mark string, log zerolog.Logger) (*launched, error) {
	// The sandbox's /tmp is private to the session and writable: the
	// profile and the downloads live there.
	profile := fmt.Sprintf("/tmp/hermes-browser-%d", time.Now().UnixNano())
	downloads := "/tmp/downloads"
	args := append([]string{chromium}, flags()...)
	args = append(args, "--no-sandbox", "--no-zygote", "--disable-gpu", "--remote-debugging-pipe", "--user-data-dir="+profile)
	var own *sandbox.Sandbox
	var proxy *filterProxy
	if pol := sb.Policy(); pol.Network != sandbox.NetOn {
		var err error
		if proxy, err = startProxy(pol.Allow, log); err != nil {
			return nil, err
		}
		pol.Network, pol.Allow, pol.Tmp = sandbox.NetOn, nil, sb.TmpDir()
		if own, err = sandbox.Start(parent, pol, sandbox.Options{Log: log}); err != nil {
			proxy.Close()
			return nil, fmt.Errorf("the browser's sandbox: %w", err)
		}
		sb = own
		args = append(args, "--proxy-server="+proxy.URL(), "--proxy-bypass-list=<-loopback>",
			"--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
			"--force-webrtc-ip-handling-policy=disable_non_proxied_udp", "--dns-prefetch-disable")
	}
	release := func() {
		if own != nil {
			own.Close()
		}
		if proxy != nil {
			proxy.Close()
		}
	}
	args = append(args, "about:blank")

	// toBrowser: we write, the browser reads on its fd 3; fromBrowser:
	// the browser writes on its fd 4.
	toR, toW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	fromR, fromW, err := os.Pipe()
	if err != nil {
		toR.Close()
		toW.Close()
		release()
		return nil, err
	}
	env = append(env, "HOME=/tmp", markEnv+"="+mark)
	out := &tail{}
	proc, err := sb.Start(parent, sandbox.Cmd{Args: args, Dir: "/tmp", Env: env, Stdout: out, Stderr: out, ExtraFiles: []*os.File{toR, fromW}})
	toR.Close()
	fromW.Close()
	if err != nil {
		toW.Close()
		fromR.Close()
		release()
		return nil, fmt.Errorf("start %s in the sandbox: %w", chromium, err)
	}
	conn := chromedp.NewPipeConn(fromR, toW)
	a := &pipeAllocator{conn: conn, proc: proc}
	actx, acancel := chromedp.NewAllocatorContext(context.WithoutCancel(parent), a)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithLogf(func(string, ...any) {}), chromedp.WithErrorf(func(string, ...any) {}))
	stop := func() {
		tctx, tcancel := context.WithTimeout(context.Background(), 5*time.Second)
		chromedp.Cancel(tctx)
		tcancel()
		cancel()
		acancel()
		conn.Close()
		proc.Kill() // its pid namespace ends with it: no child is left
		select {
		case <-proc.Done():
		case <-time.After(5 * time.Second):
		}
		// The profile is in the session's /tmp: remove it from inside.
		if p, err := sb.Start(context.Background(), sandbox.Cmd{Args: []string{"rm", "-rf", profile}, Env: env}); err == nil {
			p.Wait()
		}
		release()
	}
	if err := start(parent, ctx, stop); err != nil {
		return nil, fmt.Errorf("start %s in the sandbox: %w; it said: %s", chromium, err, out.String())
	}
	c := chromedp.FromContext(ctx)
	return &launched{ctx: ctx, cancel: cancel, lost: c.Browser.LostConnection, downloads: downloads,
		shown: filepath.Join(sb.TmpDir(), "downloads"), stop: stop}, nil
}

// startTimeout bounds a browser's start.
const startTimeout = 60 * time.Second

// start starts the browser of ctx and opens its first tab. The browser
// lives as long as ctx, not as the call that starts it, so a start that
// the call gives up on (its context ends) or that hangs is ended with
// stop.
func start(call, ctx context.Context, stop func()) error {
	done := make(chan error, 1)
	go func() { done <- chromedp.Do(ctx) }()
	var err error
	select {
	case err = <-done:
	case <-call.Done():
		err = call.Err()
	case <-time.After(startTimeout):
		err = fmt.Errorf("no answer within %s", startTimeout)
	}
	if err != nil {
		stop()
	}
	return err
}

// pipeAllocator hands chromedp a browser that was started elsewhere (in
// a sandbox) and talks over conn.
type pipeAllocator struct {
	conn *chromedp.PipeConn
	proc *sandbox.Process
	once sync.Once
}

// Allocate implements chromedp.Allocator.
func (a *pipeAllocator) Allocate(ctx context.Context, opts ...chromedp.BrowserOption) (*chromedp.Browser, error) {
	b, err := chromedp.NewBrowserTransport(ctx, a.conn, opts...)
	if err != nil {
		return nil, err
	}
	go func() {
		// A browser that dies closes its pipe; one whose pipe closes is
		// ended, so neither outlives the other.
		select {
		case <-b.LostConnection:
			a.proc.Kill()
		case <-a.proc.Done():
			a.conn.Close()
		}
	}()
	return b, nil
}

// Wait implements chromedp.Allocator.
func (a *pipeAllocator) Wait() {}

// tail keeps the last few KiB a browser writes, for the error when it
// fails to start.
type tail struct {
	mu sync.Mutex
	b  []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}
