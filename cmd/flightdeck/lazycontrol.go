package main

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/flightdeck-dev/flightdeck/config"
	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions"
)

// lazyControl is the cockpit's server control for a host that is still
// being set up when the screen opens (the demo builds its simulated host
// behind the first frame): until set, the keys say so.
type lazyControl struct {
	cfg *config.Config
	c   atomic.Pointer[sessions.Control]
}

var errNotYet = errors.New("the host is still starting")

func (l *lazyControl) set(c *sessions.Control) { l.c.Store(c) }

func (l *lazyControl) Request() sessions.LaunchRequest {
	if c := l.c.Load(); c != nil {
		return c.Request()
	}
	return sessions.LaunchRequest{}
}

func (l *lazyControl) Presets() []string { return l.cfg.PresetNames() }

func (l *lazyControl) Profiles() []string { return l.cfg.ProfileNames() }

func (l *lazyControl) Plan(r sessions.LaunchRequest) (sessions.Plan, error) {
	if c := l.c.Load(); c != nil {
		return c.Plan(r)
	}
	return sessions.Plan{Request: r}, errNotYet
}

func (l *lazyControl) Launch(ctx context.Context, p sessions.Plan) (server.Record, error) {
	if c := l.c.Load(); c != nil {
		return c.Launch(ctx, p)
	}
	return server.Record{}, errNotYet
}

func (l *lazyControl) Kill(ctx context.Context) error {
	if c := l.c.Load(); c != nil {
		return c.Kill(ctx)
	}
	return errNotYet
}

func (l *lazyControl) SetProfile(name string) error {
	if c := l.c.Load(); c != nil {
		return c.SetProfile(name)
	}
	return errNotYet
}
