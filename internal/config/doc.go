// Package config holds the settings several managers share — coordinator
// timers and resource-group defaults — and the sources they come from: a
// JSON document in etcd (watched, so a change applies to every manager
// without a restart) or a JSON file (dev mode, polled). It also offers the
// etcd election managers use to take turns running the handlers.
//
// It may import the standard library and the etcd v3 client only.
//
// Imports: go.etcd.io/etcd/client/v3/..., go.uber.org/zap.
package config
