// Package mcp is Hermes as a client of MCP servers: the mcp_servers:
// entries of config.yaml, each a Server that connects in the background,
// reconnects when its peer dies and offers the peer's tools as a toolset
// (mcp-<server>) of tools named mcp_<server>_<tool>, with schemas fit for
// the providers in use, results turned into the text the model reads, and
// the resources and prompts of the peer behind four utility tools.
package mcp

import (
	"errors"
	"fmt"
	"sort"
	"sync"
)

// Manager is the configured servers of one Hermes process.
type Manager struct {
	servers  []*Server
	disabled []string
}

// NewManager validates cfgs and returns a Server for each enabled one.
// Nothing starts before Start.
func NewManager(cfgs map[string]ServerConfig, opts *Options) (*Manager, error) {
	names := make([]string, 0, len(cfgs))
	for n := range cfgs {
		names = append(names, n)
	}
	sort.Strings(names)
	m := &Manager{}
	var errs []error
	safe := map[string]string{}
	for _, n := range names {
		if other, ok := safe[safeName(n, 1<<10)]; ok {
			errs = append(errs, fmt.Errorf("mcp_servers.%s and mcp_servers.%s would both name their tools mcp_%s_*: rename one", other, n, safeName(n, 1<<10)))
			continue
		}
		safe[safeName(n, 1<<10)] = n
		c := cfgs[n]
		if err := c.Validate(n); err != nil {
			errs = append(errs, err)
			continue
		}
		if !c.IsEnabled() {
			m.disabled = append(m.disabled, n)
			continue
		}
		m.servers = append(m.servers, NewServer(n, c, opts))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return m, nil
}

// Servers are the enabled servers, by name.
func (m *Manager) Servers() []*Server { return m.servers }

// Disabled names the servers config keeps with enabled: false.
func (m *Manager) Disabled() []string { return m.disabled }

// Start starts every server at once, each in the background.
func (m *Manager) Start() {
	for _, s := range m.servers {
		s.Start()
	}
}

// Wait returns when every server has made its first attempt, or reached
// its connect_timeout.
func (m *Manager) Wait() {
	var wg sync.WaitGroup
	for _, s := range m.servers {
		wg.Go(s.Wait)
	}
	wg.Wait()
}

// Close stops every server, all at once.
func (m *Manager) Close() error {
	var wg sync.WaitGroup
	errs := make([]error, len(m.servers))
	for i, s := range m.servers {
		wg.Go(func() {
			if err := s.Close(); err != nil {
				errs[i] = fmt.Errorf("close MCP server %s: %w", s.name, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
