package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// directivePrefix starts a line of flags at the top of a script, as
// #SBATCH does for sbatch.
const directivePrefix = "#SOKOVAN"

// newRunCmd is `sokovan run SCRIPT [flags] [-- ARGS...]`: it submits a
// shell script as a session's command, with flags read from its #SOKOVAN
// lines, then from the command line, which wins. It is `session create`
// underneath: the same flags, the same waiting.
func newRunCmd() *cobra.Command {
	var o output
	create := newSessionCreateCmd(&o)
	// On its own flags, which run parses itself: persistent flags are
	// merged in only when cobra runs a command.
	create.Flags().StringVarP(&o.format, "output", "o", "table", "output format: table or json (the API's JSON)")
	create.Flags().String(caFlag, "", "PEM file of a CA to trust, beside the system's, for an https:// manager (or SOKOVAN_CA)")
	cmd := &cobra.Command{
		Use:   "run [flags] SCRIPT [flags] [-- ARGS...]",
		Short: "Submit a script as a batch session, with flags from its #SOKOVAN lines",
		Long: "Submit SCRIPT as a session's command, as sbatch submits a script: lines at its top that begin with\n" +
			"#SOKOVAN hold `session create` flags (#SOKOVAN --cpu 2 --mem 4g), read until the first line that is\n" +
			"neither a comment nor blank. Flags on the command line win over the script's. The session is a batch\n" +
			"one unless --type says otherwise; the script runs with the interpreter of its #! line (default\n" +
			"/bin/sh), given ARGS after --. The agent must run sessions' own commands (agent run --allow-command).",
		Example: "  sokovan run train.sh --wait-end\n  sokovan run --array 0-9%2 train.sh\n" +
			"  # train.sh:\n  #!/bin/bash\n  #SOKOVAN --image sleep --cpu 2 --mem 4g --name train\n  echo training $1",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			line, after := args, []string(nil)
			if i := slices.Index(args, "--"); i >= 0 {
				line, after = args[:i], args[i+1:]
			}
			f := create.Flags()
			at := scriptArg(f, line)
			if len(args) == 0 || slices.Contains(line, "-h") || slices.Contains(line, "--help") {
				return cmd.Help()
			}
			if at < 0 {
				return fmt.Errorf("no script to submit: sokovan %s", cmd.Use)
			}
			path := line[at]
			line = slices.Delete(slices.Clone(line), at, at+1)
			script, directives, err := readScript(path)
			if err != nil {
				return err
			}
			for _, d := range directives {
				if err := f.Parse(d.args); err != nil {
					return fmt.Errorf("%s:%d: %s: %w", path, d.line, directivePrefix, err)
				}
				if f.NArg() > 0 {
					return fmt.Errorf("%s:%d: %s: %q is not a flag", path, d.line, directivePrefix, f.Arg(0))
				}
			}
			if err := f.Parse(line); err != nil {
				return err
			}
			if f.NArg() > 0 {
				return fmt.Errorf("unexpected argument %q: the script's own arguments go after --", f.Arg(0))
			}
			if !f.Changed("type") {
				_ = f.Set("type", "batch")
			}
			if err := o.check(); err != nil {
				return err
			}
			command := append([]string{interpreter(script), "-c", script, filepath.Base(path)}, after...)
			create.SetContext(cmd.Context())
			create.SetOut(cmd.OutOrStdout())
			create.SetErr(cmd.ErrOrStderr())
			return create.RunE(create, command)
		},
	}
	cmd.SetHelpFunc(func(c *cobra.Command, _ []string) {
		fmt.Fprintf(c.OutOrStdout(), "%s\n\nUsage:\n  sokovan %s\n\nExamples:\n%s\n\nFlags (in #SOKOVAN lines or on the command line):\n%s",
			c.Long, c.Use, c.Example, create.Flags().FlagUsages())
	})
	return cmd
}

// scriptArg is the index in args of the script: the first argument that
// is neither a flag nor a flag's value, so flags may come before the
// script as sbatch takes them (sokovan run --array 0-9 job.sh) or after
// it. -1 when there is none.
func scriptArg(f *pflag.FlagSet, args []string) int {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if len(a) < 2 || a[0] != '-' {
			return i
		}
		name, _, valued := strings.Cut(strings.TrimLeft(a, "-"), "=")
		var fl *pflag.Flag
		if strings.HasPrefix(a, "--") {
			fl = f.Lookup(name)
		} else if len(name) == 1 {
			fl = f.ShorthandLookup(name)
		}
		// A flag that takes a value and was not given one with = takes
		// the next argument; an unknown flag is left to Parse to refuse.
		if fl != nil && fl.NoOptDefVal == "" && !valued {
			i++
		}
	}
	return -1
}

// directive is one #SOKOVAN line's flags and where it stood.
type directive struct {
	line int
	args []string
}

// readScript reads the script and its #SOKOVAN lines: those before the
// first line that is neither a comment nor blank, split on white space.
func readScript(path string) (string, []directive, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", nil, err
	}
	if len(raw) == 0 {
		return "", nil, fmt.Errorf("%s is empty: nothing to run", path)
	}
	var ds []directive
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	for n := 1; sc.Scan(); n++ {
		l := strings.TrimSpace(sc.Text())
		if l != "" && !strings.HasPrefix(l, "#") {
			break
		}
		rest, ok := strings.CutPrefix(l, directivePrefix)
		if !ok || rest != "" && rest[0] != ' ' && rest[0] != '\t' {
			continue
		}
		if strings.ContainsAny(rest, `"'`) {
			return "", nil, fmt.Errorf("%s:%d: %s: quotes are not read; give each value without spaces", path, n, directivePrefix)
		}
		if args := strings.Fields(rest); len(args) > 0 {
			ds = append(ds, directive{line: n, args: args})
		}
	}
	if err := sc.Err(); err != nil {
		return "", nil, fmt.Errorf("%s: %w", path, err)
	}
	return string(raw), ds, nil
}

// interpreter is the program of the script's #! line, /bin/sh without one.
func interpreter(script string) string {
	first, _, _ := strings.Cut(script, "\n")
	if prog, ok := strings.CutPrefix(first, "#!"); ok {
		if f := strings.Fields(prog); len(f) > 0 {
			if f[0] == "/usr/bin/env" && len(f) > 1 {
				return f[1]
			}
			return f[0]
		}
	}
	return "/bin/sh"
}
