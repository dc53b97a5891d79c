package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// addClientCommands adds the verbs that talk to a manager's API: session,
// job, agent, rg, user, policy, login, queue, usage, deploy, apply, get and ca. They find
// the manager through SOKOVAN_ADDR and SOKOVAN_TOKEN, else the file
// `sokovan login` writes.
func addClientCommands(root *cobra.Command) {
	for _, c := range []*cobra.Command{newSessionCmd(), newJobCmd(), newAgentCmd(), newRGCmd(), newUserCmd(), newPolicyCmd(),
		newLoginCmd(), newQueueCmd(), newUsageCmd(), newDeployCmd(), newApplyCmd(), newGetCmd(), newCACmd()} {
		registerCA(c)
		root.AddCommand(c)
	}
	root.AddCommand(newRunCmd())
}

// defaultAddr is where dev mode listens.
const defaultAddr = "http://127.0.0.1:8470"

// clientConfig is what `sokovan login` saves.
type clientConfig struct {
	Addr  string `json:"addr"`
	Token string `json:"token"`
	// CA is the CA file `login --ca` trusted, kept for later commands.
	CA string `json:"ca,omitempty"`
}

func configPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("cannot find a config directory: %w", err)
	}
	return filepath.Join(dir, "sokovan", "config.json"), nil
}

// loadConfig reads the saved config; a missing file is an empty config.
func loadConfig() (clientConfig, error) {
	var cfg clientConfig
	path, err := configPath()
	if err != nil {
		return cfg, err
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return cfg, nil
	}
	if err != nil {
		return cfg, err
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return cfg, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// saveConfig writes the config readable by its owner only: it holds a
// token.
func saveConfig(cfg clientConfig) (string, error) {
	path, err := configPath()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	b, _ := json.MarshalIndent(cfg, "", "  ") // two strings always marshal
	return path, writeFileAtomic(path, append(b, '\n'), 0o600)
}

// writeFileAtomic replaces path with data in one rename, so that whoever
// waits for the file (a script, an agent's --ca) never reads it half
// written.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	// WriteFile keeps the mode of a file that exists; make sure.
	if err := os.Chmod(tmp, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// client talks to one manager.
type client struct {
	addr, token string
	http        *http.Client // for requests with an answer
	stream      *http.Client // for event streams and logs: no timeout
	// transport carries both, and port-forward's proxy: one trust.
	transport http.RoundTripper
}

// newClient resolves the manager: the environment first, then the saved
// config, then dev mode's address. cmd, when not nil, may name a CA
// (--ca) to trust.
func newClient(cmd *cobra.Command) (*client, error) {
	cfg, err := loadConfig()
	if err != nil {
		return nil, err
	}
	if v := os.Getenv("SOKOVAN_ADDR"); v != "" {
		cfg.Addr = v
	}
	if v := os.Getenv("SOKOVAN_TOKEN"); v != "" {
		cfg.Token = v
	}
	if cfg.Addr == "" {
		cfg.Addr = defaultAddr
	}
	if cfg.Token == "" {
		return nil, errors.New("no token: set SOKOVAN_TOKEN or run `sokovan login`")
	}
	addr, err := managerAddr(cfg.Addr)
	if err != nil {
		return nil, err
	}
	return dial(addr, cfg.Token, caFile(cmd, cfg.CA))
}

// dial is a client of the manager at addr, trusting the CA in ca (none:
// the system's authorities) for an https:// address.
func dial(addr, token, ca string) (*client, error) {
	pool, err := caPool(ca)
	if err != nil {
		return nil, err
	}
	rt := transport(pool)
	return &client{addr: addr, token: token, transport: rt,
		http: &http.Client{Timeout: 30 * time.Second, Transport: rt}, stream: &http.Client{Transport: rt}}, nil
}

// managerAddr reads the manager's address as people write it: a URL, or
// host:port alone (as dev mode's --listen takes it), which means http.
func managerAddr(addr string) (string, error) {
	addr = strings.TrimRight(strings.TrimSpace(addr), "/")
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil || u.Host == "" || u.Scheme != "http" && u.Scheme != "https" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("manager address %q (SOKOVAN_ADDR or `sokovan login --addr`) is not usable: "+
			"want http://HOST:PORT, https://HOST:PORT or HOST:PORT", strings.TrimPrefix(addr, "http://"))
	}
	return addr, nil
}

// apiError is an error answer of the API. It reads as the message with the
// field at fault, which main prints after "sokovan: ".
type apiError struct {
	Status int
	Body   v1.Error
}

func (e *apiError) Error() string { return e.Body.Text() }

func (c *client) request(ctx context.Context, method, path string, body any) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.addr+path, rd)
	if err != nil {
		return nil, fmt.Errorf("bad manager address %q: %w", c.addr, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// send makes a request and returns the response of a success; an error
// answer becomes an *apiError.
func (c *client) send(hc *http.Client, req *http.Request) (*http.Response, error) {
	resp, err := hc.Do(req)
	if err != nil {
		if req.Context().Err() != nil {
			return nil, req.Context().Err()
		}
		return nil, fmt.Errorf("cannot reach the manager at %s: %w", c.addr, tlsHint(err))
	}
	if resp.StatusCode < 400 {
		return resp, nil
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var body v1.ErrorResponse
	if err := json.Unmarshal(raw, &body); err != nil || body.Error.Message == "" {
		// Not the API's error body: a proxy's page, say. Show it as it came.
		return nil, &apiError{Status: resp.StatusCode, Body: v1.Error{
			Message: fmt.Sprintf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(raw)))}}
	}
	return nil, &apiError{Status: resp.StatusCode, Body: body.Error}
}

// do sends a JSON request and returns the answer's body; out, when not
// nil, receives it decoded.
func (c *client) do(ctx context.Context, method, path string, body, out any) ([]byte, error) {
	req, err := c.request(ctx, method, path, body)
	if err != nil {
		return nil, err
	}
	resp, err := c.send(c.http, req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the answer: %w", err)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return nil, fmt.Errorf("unexpected answer from %s %s: %w", method, path, err)
		}
	}
	return raw, nil
}

// sseEvent is one server-sent event.
type sseEvent struct {
	ID, Event, Data string
}

// events opens the event stream and hands each event to fn until fn says
// it is done, the stream ends (io.EOF) or fails. opened, when set, is
// called once the manager has accepted the stream.
func (c *client) events(ctx context.Context, path, lastID string, opened func(), fn func(sseEvent) (bool, error)) error {
	req, err := c.request(ctx, "GET", path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := c.send(c.stream, req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if opened != nil {
		opened()
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var ev sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.Event != "" || ev.Data != "" {
				done, err := fn(ev)
				if err != nil || done {
					return err
				}
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, ":"): // a comment: keep-alive
		default:
			k, v, _ := strings.Cut(line, ":")
			v = strings.TrimPrefix(v, " ")
			switch k {
			case "id":
				ev.ID = v
			case "event":
				ev.Event = v
			case "data":
				if ev.Data != "" {
					ev.Data += "\n"
				}
				ev.Data += v
			}
		}
	}
	if err := sc.Err(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("event stream: %w", err)
	}
	return io.EOF
}

// output is the -o flag of every client verb.
type output struct{ format string }

func (o *output) register(cmd *cobra.Command) {
	cmd.PersistentFlags().StringVarP(&o.format, "output", "o", "table", "output format: table or json (the API's JSON)")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"table", "json"}, cobra.ShellCompDirectiveNoFileComp))
}

func (o *output) check() error {
	if o.format != "table" && o.format != "json" {
		return fmt.Errorf("unknown output format %q (want table or json)", o.format)
	}
	return nil
}

func (o *output) json() bool { return o.format == "json" }

// printJSON writes the API's JSON, indented for reading; the content is
// unchanged.
func printJSON(w io.Writer, raw []byte) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, bytes.TrimSpace(raw), "", "  "); err != nil {
		_, werr := w.Write(raw)
		return werr
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}

// table writes aligned columns.
func table(w io.Writer, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// when writes a time for a table: local, to the second; "-" when unset.
func when(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

// slotList writes slots as "cpu=2 mem=4g", in a stable order.
func slotList(m map[string]string) string {
	if len(m) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, " ")
}

// given is v when the flag name was given, else T's zero value: a request
// leaves out what the user did not set, so the server's defaults apply.
func given[T any](f *pflag.FlagSet, name string, v T) T {
	if !f.Changed(name) {
		var zero T
		return zero
	}
	return v
}

// keyValues splits repeated NAME=VALUE flags.
func keyValues(flag string, pairs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--%s wants NAME=VALUE, got %q", flag, p)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("--%s names %s twice", flag, k)
		}
		out[k] = v
	}
	return out, nil
}

// completeFrom offers completions fetched from the manager, quietly
// offering nothing when it cannot be reached.
func completeFrom(list func(ctx context.Context, c *client) ([]string, error)) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		c, err := newClient(cmd)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), 3*time.Second)
		defer cancel()
		out, err := list(ctx, c)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// call makes one API request and prints the answer: the API's own JSON
// with -o json, otherwise what render writes from the decoded value.
func call[T any](cmd *cobra.Command, o *output, method, path string, body any, render func(w io.Writer, v T) error) error {
	c, err := newClient(cmd)
	if err != nil {
		return err
	}
	var v T
	raw, err := c.do(cmd.Context(), method, path, body, &v)
	if err != nil {
		return err
	}
	if o.json() {
		return printJSON(cmd.OutOrStdout(), raw)
	}
	return render(cmd.OutOrStdout(), v)
}
