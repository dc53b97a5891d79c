-- The ports a kernel serves (domain.Kernel.ServicePorts), as its agent
-- reported them on kernel_started: a JSON list of {name, protocol, host,
-- port}. Only the API reads it, to show and proxy them; SQL never looks
-- inside, so TEXT is enough in both engines. '[]' is "none".

-- +goose Up
ALTER TABLE kernels ADD COLUMN service_ports TEXT NOT NULL DEFAULT '[]';

-- +goose Down
ALTER TABLE kernels DROP COLUMN service_ports;
