package plugins

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/uuid"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// Stream holds every install, update, removal and switch of a plugin, in
// order.
const Stream = "plugins"

// Plugin is one installed plugin as the stream has it.
type Plugin struct {
	Name string
	schema.PluginPin
	Enabled bool
	// Dir is where its files are ($HERMES_HOME/plugins/<name>).
	Dir string
}

// Book keeps a home's plugins: their files under Dir and their events in
// Store.
type Book struct {
	Store events.Store
	// Dir is $HERMES_HOME/plugins.
	Dir string
	// Git is the git program (default "git").
	Git string
}

// ErrNotInstalled is returned for a name no plugin has.
var ErrNotInstalled = errors.New("no such plugin")

// List returns the installed plugins by name, and the stream's revision
// (for appending after it).
func (b *Book) List(ctx context.Context) ([]Plugin, events.Expected, error) {
	rs, err := b.Store.ReadStream(ctx, Stream, events.Forward, 0, 0)
	if err != nil {
		return nil, events.Any, fmt.Errorf("read %s: %w", Stream, err)
	}
	expected := events.NoStream
	byName := map[string]*Plugin{}
	for _, r := range rs {
		expected = events.Exact(r.Revision)
		p, err := schema.Decode(r.Envelope)
		if err != nil {
			return nil, events.Any, &events.CorruptEventError{Stream: r.Stream, Revision: r.Revision, Position: r.Position, Err: err}
		}
		switch e := p.(type) {
		case schema.PluginInstalled:
			byName[e.Name] = &Plugin{Name: e.Name, PluginPin: e.PluginPin, Enabled: !e.Disabled, Dir: filepath.Join(b.Dir, e.Name)}
		case schema.PluginUpdated:
			if x := byName[e.Name]; x != nil {
				x.PluginPin = e.PluginPin
			}
		case schema.PluginRemoved:
			delete(byName, e.Name)
		case schema.PluginEnabled:
			if x := byName[e.Name]; x != nil {
				x.Enabled = true
			}
		case schema.PluginDisabled:
			if x := byName[e.Name]; x != nil {
				x.Enabled = false
			}
		}
	}
	out := make([]Plugin, 0, len(byName))
	for _, p := range byName {
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, expected, nil
}

// Get returns the plugin called name.
func (b *Book) Get(ctx context.Context, name string) (Plugin, events.Expected, error) {
	all, exp, err := b.List(ctx)
	if err != nil {
		return Plugin{}, exp, err
	}
	for _, p := range all {
		if p.Name == name {
			return p, exp, nil
		}
	}
	return Plugin{}, exp, fmt.Errorf("%w %q: `hermes plugins list` shows the installed ones", ErrNotInstalled, name)
}

func (b *Book) append(ctx context.Context, expected events.Expected, ps ...schema.Payload) error {
	envs := make([]schema.Envelope, 0, len(ps))
	for _, p := range ps {
		e, err := schema.NewEnvelope(schema.Meta{}, p)
		if err != nil {
			return err
		}
		envs = append(envs, e)
	}
	if _, err := b.Store.Append(context.WithoutCancel(ctx), Stream, expected, envs...); err != nil {
		var wrong *events.WrongExpectedVersionError
		if errors.As(err, &wrong) {
			return fmt.Errorf("the plugins changed meanwhile (another hermes?): try again: %w", err)
		}
		return err
	}
	return nil
}

// IsGit tells a git source from a directory: a URL, an scp-style
// address, a path ending in .git, or a ref asked for.
func IsGit(source, ref string) bool {
	if ref != "" || strings.Contains(source, "://") || strings.HasSuffix(source, ".git") {
		return true
	}
	at, colon := strings.Index(source, "@"), strings.Index(source, ":")
	return at > 0 && colon > at
}

// stage puts a copy of source (a directory, or a git repository checked
// out at ref: its default branch when empty) in a new directory under
// b.Dir and returns it with the commit checked out ("" for a directory).
func (b *Book) stage(ctx context.Context, source, kind, ref string) (dir, commit string, err error) {
	if err := os.MkdirAll(b.Dir, 0o700); err != nil {
		return "", "", err
	}
	dir = filepath.Join(b.Dir, ".staging-"+uuid.NewString()[:8])
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	if kind == "dir" {
		abs, err := filepath.Abs(source)
		if err != nil {
			return "", "", err
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return "", "", fmt.Errorf("%s is not a directory (a git repository is given by its URL, or with --ref)", source)
		}
		return dir, "", copyTree(abs, dir)
	}
	git := b.Git
	if git == "" {
		git = "git"
	}
	run := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, git, args...)
		cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("git %s: %v: %s", args[0], err, strings.TrimSpace(errb.String()))
		}
		return strings.TrimSpace(out.String()), nil
	}
	if _, err := run("clone", "--quiet", "--no-checkout", "--", source, dir); err != nil {
		return "", "", err
	}
	target := "HEAD"
	if ref != "" {
		target = ref
	}
	commit, err = run("-C", dir, "rev-parse", "--verify", "--end-of-options", target+"^{commit}")
	if err != nil && ref != "" {
		// A branch of the remote that is not the default one.
		commit, err = run("-C", dir, "rev-parse", "--verify", "--end-of-options", "origin/"+ref+"^{commit}")
	}
	if err != nil {
		return "", "", fmt.Errorf("%s has no commit %q: %v", source, ref, err)
	}
	if _, err := run("-C", dir, "checkout", "--quiet", "--detach", commit); err != nil {
		return "", "", err
	}
	return dir, commit, os.RemoveAll(filepath.Join(dir, ".git"))
}

// pin describes the staged plugin in dir.
func pin(dir, source, kind, commit string) (Manifest, schema.PluginPin, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return m, schema.PluginPin{}, err
	}
	hash, err := Hash(dir)
	if err != nil {
		return m, schema.PluginPin{}, err
	}
	p := schema.PluginPin{Version: m.Version, Description: m.Description, Source: source, Kind: kind, Commit: commit, Hash: hash,
		Tools: m.Tools, Hooks: m.hookEvents(), Commands: m.commandNames(), Providers: m.providerNames(), Platforms: m.platformNames(), Network: m.Needs.Network, Hosts: m.Needs.Hosts,
		Env: m.Needs.Env, Workspace: m.Needs.Workspace}
	if p.Network == "" {
		p.Network = "off"
	}
	if p.Workspace == "" {
		p.Workspace = "read"
	}
	return m, p, nil
}

// Install installs the plugin at source (a directory, or a git repository
// at ref) and records it. It is enabled unless disabled is set.
func (b *Book) Install(ctx context.Context, source, ref string, disabled bool) (Plugin, error) {
	kind := "dir"
	if IsGit(source, ref) {
		kind = "git"
	} else if abs, err := filepath.Abs(source); err == nil {
		source = abs
	}
	dir, commit, err := b.stage(ctx, source, kind, ref)
	if err != nil {
		return Plugin{}, err
	}
	defer os.RemoveAll(dir)
	m, p, err := pin(dir, source, kind, commit)
	if err != nil {
		return Plugin{}, err
	}
	all, expected, err := b.List(ctx)
	if err != nil {
		return Plugin{}, err
	}
	for _, x := range all {
		if x.Name == m.Name {
			return Plugin{}, fmt.Errorf("plugin %q is installed already (from %s): `hermes plugins update %s` moves it, `hermes plugins remove %s` removes it", m.Name, x.Source, m.Name, m.Name)
		}
	}
	final := filepath.Join(b.Dir, m.Name)
	os.RemoveAll(final) // files left by a removal that did not finish
	if err := os.Rename(dir, final); err != nil {
		return Plugin{}, err
	}
	if err := b.append(ctx, expected, schema.PluginInstalled{Name: m.Name, PluginPin: p, Disabled: disabled}); err != nil {
		os.RemoveAll(final)
		return Plugin{}, err
	}
	return Plugin{Name: m.Name, PluginPin: p, Enabled: !disabled, Dir: final}, nil
}

// Update moves the plugin name to what its source has now (a git source:
// at ref, its default branch when empty) and records it; changed is false
// when nothing did.
func (b *Book) Update(ctx context.Context, name, ref string) (p Plugin, changed bool, err error) {
	old, expected, err := b.Get(ctx, name)
	if err != nil {
		return Plugin{}, false, err
	}
	if ref != "" && old.Kind != "git" {
		return Plugin{}, false, fmt.Errorf("plugin %q was installed from a directory: it has no refs", name)
	}
	dir, commit, err := b.stage(ctx, old.Source, old.Kind, ref)
	if err != nil {
		return Plugin{}, false, err
	}
	defer os.RemoveAll(dir)
	m, pn, err := pin(dir, old.Source, old.Kind, commit)
	if err != nil {
		return Plugin{}, false, err
	}
	if m.Name != name {
		return Plugin{}, false, fmt.Errorf("%s now names its plugin %q, not %q: install it as a new plugin", old.Source, m.Name, name)
	}
	fromCommit, fromHash := old.Commit, old.Hash
	old.PluginPin, old.Dir = pn, filepath.Join(b.Dir, name)
	if pn.Hash == fromHash && pn.Commit == fromCommit {
		if h, err := Hash(old.Dir); err == nil && h == pn.Hash {
			return old, false, nil
		}
	}
	prev := filepath.Join(b.Dir, ".old-"+name+"-"+uuid.NewString()[:8])
	if err := os.Rename(old.Dir, prev); err != nil && !errors.Is(err, os.ErrNotExist) {
		return Plugin{}, false, err
	}
	if err := os.Rename(dir, old.Dir); err != nil {
		os.Rename(prev, old.Dir)
		return Plugin{}, false, err
	}
	if err := b.append(ctx, expected, schema.PluginUpdated{Name: name, PluginPin: pn, FromCommit: fromCommit, FromHash: fromHash}); err != nil {
		os.RemoveAll(old.Dir)
		os.Rename(prev, old.Dir)
		return Plugin{}, false, err
	}
	os.RemoveAll(prev)
	return old, true, nil
}

// Remove records the plugin's removal and deletes its files.
func (b *Book) Remove(ctx context.Context, name string) error {
	p, expected, err := b.Get(ctx, name)
	if err != nil {
		return err
	}
	if err := b.append(ctx, expected, schema.PluginRemoved{Name: name}); err != nil {
		return err
	}
	return os.RemoveAll(p.Dir)
}

// SetEnabled turns the plugin on or off; changed is false when it already
// was.
func (b *Book) SetEnabled(ctx context.Context, name string, on bool) (changed bool, err error) {
	p, expected, err := b.Get(ctx, name)
	if err != nil {
		return false, err
	}
	if p.Enabled == on {
		return false, nil
	}
	var ev schema.Payload = schema.PluginDisabled{Name: name}
	if on {
		ev = schema.PluginEnabled{Name: name}
	}
	return true, b.append(ctx, expected, ev)
}
