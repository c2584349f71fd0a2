package schema

// Plugins live in a stream of their own (adapters/plugins): what was
// installed, from where, pinned to which commit and tree hash, and whether
// it is on. Whatever reads the stream folds it in order.

// PluginPin is what a plugin was installed or updated to: its source, the
// commit a git source was checked out at, the hash of the installed tree
// (sha256 over its files' paths, modes and contents), and what its
// manifest declares it registers and needs.
type PluginPin struct {
	Version     string `json:"version,omitempty"`
	Description string `json:"description,omitempty"`
	// Source is the directory or git repository installed from; Kind is
	// dir or git.
	Source string `json:"source"`
	Kind   string `json:"kind"`
	// Commit is the git commit checked out (git sources).
	Commit string `json:"commit,omitempty"`
	// Hash is "sha256:<hex>" of the installed tree: a plugin whose files
	// no longer hash to it is not started.
	Hash string `json:"hash"`
	// Tools, Hooks (events), Commands, Providers (model providers,
	// provider: plugin:NAME) and Platforms (gateway platforms) are what
	// it registers.
	Tools     []string `json:"tools,omitempty"`
	Hooks     []string `json:"hooks,omitempty"`
	Commands  []string `json:"commands,omitempty"`
	Providers []string `json:"providers,omitempty"`
	Platforms []string `json:"platforms,omitempty"`
	// Network, Hosts, Env and Workspace are what it needs: the network
	// (off, on, allow with Hosts), the environment variables it is given,
	// and whether it may write the working directory (read or write).
	Network   string   `json:"network,omitempty"`
	Hosts     []string `json:"hosts,omitempty"`
	Env       []string `json:"env,omitempty"`
	Workspace string   `json:"workspace,omitempty"`
}

// PluginInstalled records a plugin installed in $HERMES_HOME/plugins.
type PluginInstalled struct {
	Name string `json:"name"`
	PluginPin
	// Disabled is set when it was installed off.
	Disabled bool `json:"disabled,omitempty"`
}

// PluginUpdated records a plugin moved to another commit or tree.
type PluginUpdated struct {
	Name string `json:"name"`
	PluginPin
	// FromCommit and FromHash are what it was before.
	FromCommit string `json:"from_commit,omitempty"`
	FromHash   string `json:"from_hash"`
}

// PluginRemoved records a plugin's removal (its files are deleted).
type PluginRemoved struct {
	Name string `json:"name"`
}

// PluginEnabled turns a plugin on: the next chat starts it.
type PluginEnabled struct {
	Name string `json:"name"`
}

// PluginDisabled turns a plugin off: the next chat does not start it.
type PluginDisabled struct {
	Name string `json:"name"`
}

// Event type names, as EventType returns them and envelopes carry them:
// compare with these, not with literals, so a renamed event breaks the build.
const (
	TypePluginInstalled = "PluginInstalled"
	TypePluginUpdated   = "PluginUpdated"
	TypePluginRemoved   = "PluginRemoved"
	TypePluginEnabled   = "PluginEnabled"
	TypePluginDisabled  = "PluginDisabled"
)

func (PluginInstalled) EventType() string { return TypePluginInstalled }
func (PluginUpdated) EventType() string   { return TypePluginUpdated }
func (PluginRemoved) EventType() string   { return TypePluginRemoved }
func (PluginEnabled) EventType() string   { return TypePluginEnabled }
func (PluginDisabled) EventType() string  { return TypePluginDisabled }
