package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/sokovan-go/sokovan/internal/api"
	"github.com/sokovan-go/sokovan/internal/clock"
	"github.com/sokovan-go/sokovan/internal/manager"
	"github.com/sokovan-go/sokovan/internal/simulate"
	"github.com/sokovan-go/sokovan/internal/web"
)

type httpHandler = http.Handler

// userAPI builds the REST API over a manager's parts, with the web
// dashboard in front of it at "/", creating the admin user from
// adminToken when one is given.
func userAPI(p manager.Parts, adminToken string) (http.Handler, error) {
	return userAPIWith(p, adminToken, api.Config{})
}

// userAPIWith is userAPI with the API's settings.
func userAPIWith(p manager.Parts, adminToken string, cfg api.Config) (http.Handler, error) {
	if adminToken != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := api.EnsureAdmin(ctx, p.Store, adminToken); err != nil {
			return nil, fmt.Errorf("admin token: %w", err)
		}
	}
	deps := api.Deps{
		Store: p.Store, Sessions: p.Coordinator, Slots: p.Slots, Plugins: p.Plugins, Hooks: p.Hooks, Admit: p.Admit,
		AgentRPC: p.Gateway, AgentToken: p.AgentToken, ClusterCA: p.ClusterCA, IdentityChanged: p.IdentityChanged, Logs: p.Agents.Logs, Gatherer: p.Gatherer, Registerer: p.Registerer,
		Ready: func(ctx context.Context) error {
			_, err := p.Store.ListResourceGroups(ctx)
			return err
		},
		Estimate:     simulate.Estimator(p.Store, p.Slots, clock.Wall),
		EstimateWith: simulate.EstimatorWith(p.Store, p.Slots, clock.Wall),
	}
	if p.Deploy != nil {
		deps.Deploy = p.Deploy
	}
	srv := api.New(cfg, deps)
	if p.Deploy != nil {
		// This manager's proxy load feeds the deployments' autoscaling.
		p.Deploy.UseLoad(srv)
	}
	return web.Mount(srv), nil
}
