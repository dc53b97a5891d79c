package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

func newApplyCmd() *cobra.Command {
	var o output
	var files []string
	var dry bool
	cmd := &cobra.Command{
		Use:   "apply -f FILE|DIR|- [-f ...]",
		Short: "Create or update sessions, jobs and deployments from YAML or JSON files, by name",
		Long: "Each object is kind (Session, Job or Deployment), name and spec, where spec is the body of the kind's\n" +
			"create route in the API (`sokovan get KIND NAME -o yaml` writes one). A Job may hold members: sessions\n" +
			"of the job. A file holds several objects as YAML documents (---), a YAML list, or a JSON array.\n\n" +
			"The name is the identity: an object whose name none of your live objects of its kind has is created;\n" +
			"one whose spec matches the live one is unchanged, so applying a file twice changes nothing; a changed\n" +
			"deployment rolls out its new spec. A session or job cannot change once submitted: a changed one is\n" +
			"refused. Every object is checked before any is written, so a refusal, which names the file, line,\n" +
			"object and field, changes nothing. --dry-run checks everything on the manager, writes nothing, and\n" +
			"says where each new session would wait and when it is estimated to start.\n\n" +
			"A Session whose spec has array (\"0-99%10\", as session create --array takes it) is an array, named by\n" +
			"the object: its elements are NAME[index]. It cannot change once submitted, as a session cannot; it\n" +
			"cannot be a Job's member.",
		Example: "  sokovan apply -f train.yaml\n  sokovan apply -f ./jobs/ --dry-run\n  sokovan get session train -o yaml | sokovan apply -f -",
		Args:    cobra.NoArgs,
		PreRunE: func(*cobra.Command, []string) error { return o.check() },
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(files) == 0 {
				return errors.New("name what to apply with -f FILE, -f DIR or -f - (standard input)")
			}
			objs, err := readSources(files, cmd.InOrStdin())
			if err != nil {
				return err
			}
			c, err := newClient(cmd)
			if err != nil {
				return err
			}
			req := v1.ApplyRequest{Objects: make([]v1.Object, len(objs))}
			for i, ob := range objs {
				req.Objects[i] = ob.value
			}
			path := "/v1/apply"
			if dry {
				path += "?dry_run=true"
			}
			var out v1.Apply
			raw, err := c.do(cmd.Context(), "POST", path, req, &out)
			var ae *apiError
			if errors.As(err, &ae) {
				return objectError(objs, ae)
			}
			if err != nil {
				return err
			}
			if o.json() {
				return printJSON(cmd.OutOrStdout(), raw)
			}
			return printApply(cmd.OutOrStdout(), objs, out)
		},
	}
	o.register(cmd)
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "a YAML or JSON file, a directory of them, or - for standard input (repeatable)")
	cmd.Flags().BoolVar(&dry, "dry-run", false, "check everything on the manager and say what would be done, writing nothing")
	return cmd
}

// printApply says what apply did with each object, one line each, as
// kind/name and the action; a dry run adds each new session's wait and
// estimated start.
func printApply(w io.Writer, objs []fileObject, out v1.Apply) error {
	if out.DryRun {
		fmt.Fprintln(w, "dry run: nothing was written")
	}
	for _, it := range out.Items {
		label := strings.ToLower(it.Kind) + "/" + it.Name
		if it.Member != nil && it.Object < len(objs) {
			job, _ := objs[it.Object].value["name"].(string)
			label += fmt.Sprintf(" (job %s)", job)
		}
		action := it.Action
		if out.DryRun && action != "unchanged" {
			action = "would be " + action
		}
		if len(it.Changed) > 0 {
			action += " (" + strings.Join(it.Changed, ", ") + ")"
		}
		if it.Array != "" {
			action += fmt.Sprintf(" (array %s: %d elements)", it.Array, it.Count)
		}
		fmt.Fprintf(w, "%s %s\n", label, action)
		if it.Wait != "" && len(it.Elements) > 0 {
			fmt.Fprintf(w, "  %s[%d], the first element: %s\n", it.Name, it.Elements[0].Index, it.Wait)
		} else if it.Wait != "" {
			fmt.Fprintf(w, "  %s\n", it.Wait)
		}
		for _, b := range it.Blockers[min(1, len(it.Blockers)):] {
			fmt.Fprintf(w, "  also: %s\n", b.Message)
		}
		if out.DryRun && it.Action == "created" && it.Kind == v1.KindSession {
			if it.EstimatedStart != nil {
				fmt.Fprintf(w, "  estimated start: %s\n", when(it.EstimatedStart))
			} else {
				fmt.Fprintln(w, "  estimated start: none (it cannot start, or not within a week)")
			}
		}
		if len(it.Elements) > 1 {
			fmt.Fprintf(w, "  %s\n", elementsLine(it))
		}
	}
	return nil
}

// elementsLine sums up a dry run's elements of an array: how many would
// start now, and when the last is estimated to start.
func elementsLine(it v1.ApplyItem) string {
	now := 0
	for _, e := range it.Elements {
		if strings.HasPrefix(e.Wait, "starts now") {
			now++
		}
	}
	last := it.Elements[len(it.Elements)-1]
	line := fmt.Sprintf("%d of %d elements would start now; the last, %s[%d], ", now, len(it.Elements), it.Name, last.Index)
	if last.EstimatedStart == nil {
		return line + "has no estimated start"
	}
	return line + "is estimated to start " + when(last.EstimatedStart)
}

func newGetCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "get session|job|deployment|array NAME",
		Short: "Write an object as a file that `sokovan apply` takes",
		Long: "Writes the session, job (with its live members) or deployment as an apply object, its spec as the\n" +
			"manager completed it (defaults filled in). Applying the output again changes nothing.\n\n" +
			"An array is a Session object with spec.array: `get session NAME` (or `get array NAME`) of an array's\n" +
			"name writes its index spec and its elements' spec. An element (NAME[i]) is not written on its own:\n" +
			"get the array.",
		Example: "  sokovan get deployment web -o yaml > web.yaml",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "yaml" && format != "json" {
				return fmt.Errorf("unknown output format %q (want yaml or json)", format)
			}
			c, err := newClient(cmd)
			if err != nil {
				return err
			}
			obj, err := getObject(cmd.Context(), c, args[0], args[1])
			if err != nil {
				return err
			}
			if format == "yaml" {
				// Editors that read this line check the file against the
				// manager's schema as it is edited.
				fmt.Fprintf(cmd.OutOrStdout(), "# yaml-language-server: $schema=%s/v1/apply/schema.json\n", c.addr)
			}
			return writeObject(cmd.OutOrStdout(), obj, format)
		},
	}
	cmd.Flags().StringVarP(&format, "output", "o", "yaml", "output format: yaml or json")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"yaml", "json"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// getObject reads an object from the API and makes it an apply object.
func getObject(ctx context.Context, c *client, kind, ref string) (any, error) {
	switch strings.ToLower(kind) {
	case "session", "sessions":
		var s v1.Session
		_, err := c.do(ctx, "GET", "/v1/sessions/"+url.PathEscape(ref), nil, &s)
		if a, _, found, aerr := asArray(ctx, c, ref, err); aerr != nil || found {
			if aerr != nil {
				return nil, aerr
			}
			return arrayObject(ctx, c, a)
		}
		if err != nil {
			return nil, err
		}
		if s.Array != "" {
			return nil, elementRefused(ctx, c, ref, s)
		}
		return v1.SessionObject{Kind: v1.KindSession, Name: s.Name, Spec: sessionSpec(s)}, nil
	case "array", "arrays":
		var a v1.Array
		if _, err := c.do(ctx, "GET", arrayPath(ref), nil, &a); err != nil {
			return nil, err
		}
		return arrayObject(ctx, c, a)
	case "job", "jobs":
		var j v1.Job
		if _, err := c.do(ctx, "GET", "/v1/jobs/"+url.PathEscape(ref), nil, &j); err != nil {
			return nil, err
		}
		mi := j.MinAvailable
		obj := v1.JobObject{Kind: v1.KindJob, Name: j.Name, Spec: v1.CreateJobRequest{MinAvailable: &mi,
			PermitTimeout: j.PermitTimeout, FailurePolicy: j.FailurePolicy}}
		for _, m := range j.Members {
			if ended(m.Status) {
				continue // applying it again would start a new one
			}
			var s v1.Session
			if _, err := c.do(ctx, "GET", "/v1/sessions/"+url.PathEscape(m.ID), nil, &s); err != nil {
				return nil, err
			}
			spec := sessionSpec(s)
			spec.Job = "" // the job that holds it
			obj.Members = append(obj.Members, v1.MemberObject{Name: s.Name, Spec: spec})
		}
		return obj, nil
	case "deployment", "deployments", "deploy":
		var d v1.Deployment
		if _, err := c.do(ctx, "GET", "/v1/deployments/"+url.PathEscape(ref), nil, &d); err != nil {
			return nil, err
		}
		return v1.DeploymentObject{Kind: v1.KindDeployment, Name: d.Name, Spec: deploymentSpec(d)}, nil
	}
	return nil, fmt.Errorf("unknown kind %q: want session, job, deployment or array", kind)
}

// arrayObject is an array as a Session object with spec.array: its
// index spec, and the spec of its elements as one of them holds it, less
// the variables each element gets of its own.
func arrayObject(ctx context.Context, c *client, a v1.Array) (v1.SessionObject, error) {
	if len(a.Elements) == 0 {
		return v1.SessionObject{}, fmt.Errorf("array %s (%s) lists no elements", a.Name, a.ID)
	}
	var s v1.Session
	if _, err := c.do(ctx, "GET", sessionPath(a.Elements[0].ID), nil, &s); err != nil {
		return v1.SessionObject{}, err
	}
	spec := sessionSpec(s)
	spec.Array = a.Spec
	spec.Env = nil
	for k, v := range s.Env {
		if k == "SOKOVAN_ARRAY_INDEX" || k == "SOKOVAN_ARRAY_COUNT" || k == "SOKOVAN_ARRAY_ID" {
			continue
		}
		if spec.Env == nil {
			spec.Env = map[string]string{}
		}
		spec.Env[k] = v
	}
	return v1.SessionObject{Kind: v1.KindSession, Name: a.Name, Spec: spec}, nil
}

// elementRefused says why an array's element is no object of its own:
// applied, it would be a new session beside the array, so get the array.
func elementRefused(ctx context.Context, c *client, ref string, s v1.Session) error {
	name := s.Array
	var a v1.Array
	if _, err := c.do(ctx, "GET", arrayPath(s.Array), nil, &a); err == nil {
		name = a.Name
	}
	return fmt.Errorf("%s is an element of array %s, which is applied as a whole: get the array (sokovan get session %s)",
		ref, name, name)
}

func ended(status string) bool {
	switch status {
	case "TERMINATED", "CANCELLED", "ERROR":
		return true
	}
	return false
}

// sessionSpec is the request that makes the session again, as the
// manager completed it.
func sessionSpec(s v1.Session) v1.CreateSessionRequest {
	size, prio, preempt := s.ClusterSize, s.Priority, s.Preemptible
	spec := v1.CreateSessionRequest{Type: s.Type, Image: s.Image, Architecture: s.Architecture,
		Resources: s.RequestedSlots, ClusterMode: s.ClusterMode, ClusterSize: &size, Priority: &prio,
		ResourceGroup: s.ResourceGroup, DependsOn: s.DependsOn, TimeLimit: s.TimeLimit, Preemptible: &preempt,
		Requeue: s.Requeue, DesignatedAgents: s.DesignatedAgents, Command: s.Command, Env: s.Env, Job: s.Job}
	if s.StartsAt != nil {
		spec.StartsAt = s.StartsAt.UTC().Format(time.RFC3339Nano)
	}
	if len(s.DesignatedAgents) > 0 {
		strict := s.DesignatedStrict
		spec.DesignatedStrict = &strict
	}
	return spec
}

// deploymentSpec is the request that makes the deployment again.
func deploymentSpec(d v1.Deployment) v1.CreateDeploymentRequest {
	replicas, surge, hc := d.Replicas, d.MaxSurge, d.HealthCheck
	return v1.CreateDeploymentRequest{Image: d.Image, Resources: d.Resources, Replicas: &replicas, Command: d.Command,
		Env: d.Env, ResourceGroup: d.ResourceGroup, HealthCheck: &hc, MaxSurge: &surge, Autoscale: d.Autoscale}
}

// writeObject writes an apply object as JSON or YAML, its fields in the
// order (and with the names) of its JSON form.
func writeObject(w io.Writer, obj any, format string) error {
	raw, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	if format == "json" {
		return printJSON(w, raw)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	n, err := jsonNode(dec)
	if err != nil {
		return err
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return err
	}
	return enc.Close()
}

// jsonNode reads one JSON value into a YAML node, keeping the order of
// object keys, which a map would lose.
func jsonNode(dec *json.Decoder) (*yaml.Node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		kind := yaml.MappingNode
		if t == '[' {
			kind = yaml.SequenceNode
		}
		n := &yaml.Node{Kind: kind}
		for dec.More() {
			if kind == yaml.MappingNode {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k.(string)})
			}
			v, err := jsonNode(dec)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, v)
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
		return n, nil
	case string:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: t}, nil
	case json.Number:
		tag := "!!int"
		if strings.ContainsAny(t.String(), ".eE") {
			tag = "!!float"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: t.String()}, nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: fmt.Sprint(t)}, nil
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
}
