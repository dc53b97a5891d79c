package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/simulate"
)

func newSimulateCmd() *cobra.Command {
	var (
		workloadFile, generate, importSpec, clusterSpec string
		from                                            string
		outJSON, outHTML, saveWorkload, cpuProfile      string
		outSessions, limits, classes                    string
		sets, compare                                   []string
		seed                                            uint64
		horizon, tick, timeout, window                  time.Duration
		samples                                         int
		scaleNodes                                      float64
		progress                                        bool
	)
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Replay a workload through the scheduler faster than real time",
		Long: "Runs the production coordinator, scheduler and store (SQLite in a temporary directory) against\n" +
			"simulated agents on a virtual clock, and reports waits, utilisation and fairness.\n" +
			"The workload format and the generator are described in docs/SIMULATION.md.",
		Example: "  sokovan simulate --generate sessions=2000,users=20,seed=1 --cluster agents=50,cpu=64,mem=256g,cuda.shares=8 -o r.json --html r.html\n" +
			"  sokovan simulate --workload w.jsonl --cluster cluster.json --compare group.sequencer=fifo,lifo,drf\n" +
			"  SOKOVAN_TOKEN=... sokovan simulate --from http://manager:8080",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			reg := domain.DefaultRegistry()
			if from != "" {
				return estimateFrom(cmd.Context(), cmd.OutOrStdout(), from, reg)
			}
			sources := 0
			for _, s := range []string{workloadFile, generate, importSpec} {
				if s != "" {
					sources++
				}
			}
			if sources != 1 {
				return errors.New("give one of --workload, --generate or --import")
			}
			if clusterSpec == "" {
				return errors.New("--cluster is required")
			}
			defer simulate.BatchGC()()
			cl, err := simulate.LoadCluster(clusterSpec, scaleNodes, reg)
			if err != nil {
				return err
			}
			var base []simulate.Setting
			for _, s := range sets {
				x, err := simulate.ParseSetting(s)
				if err != nil {
					return err
				}
				base = append(base, x)
			}
			variants, err := simulate.Variants(base, compare)
			if err != nil {
				return err
			}
			w, source, err := loadWorkload(reg, cl, workloadFile, generate, importSpec, seed, cmd.Flags().Changed("seed"), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if err := simulate.ApplyLimits(&w, limits); err != nil {
				return err
			}
			if saveWorkload != "" {
				if err := writeFile(saveWorkload, w.WriteJSONL); err != nil {
					return err
				}
			}
			opt := simulate.Options{Seed: seed, Horizon: horizon, Samples: samples, Tick: tick, Window: window}
			if opt.Classes, err = parseClasses(classes); err != nil {
				return err
			}
			if progress || isTerminal(os.Stderr) {
				opt.Progress = cmd.ErrOrStderr()
			}
			stopProfile, err := startCPUProfile(cpuProfile)
			if err != nil {
				return err
			}
			defer stopProfile()
			start := time.Now()
			ctx, cancel := withTimeout(cmd.Context(), timeout)
			defer cancel()
			vs, err := simulate.Compare(ctx, w, cl, variants, opt)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "simulate: %d sessions × %d variants in %.1fs wall time\n",
				len(w.Sessions), len(vs), time.Since(start).Seconds())
			rep := simulate.NewReport(source, w, cl, vs)
			return writeReport(cmd.OutOrStdout(), rep, len(variants), outJSON, outHTML, outSessions)
		},
	}
	f := cmd.Flags()
	f.StringVar(&workloadFile, "workload", "", "JSONL workload file, one session per line (docs/SIMULATION.md)")
	f.StringVar(&generate, "generate", "", "generate a workload: sessions=N,users=N,seed=N,load=0.8,… (docs/SIMULATION.md)")
	f.StringVar(&importSpec, "import", "", "import a public trace: openb:FILE (Alibaba cluster-trace-gpu-v2023 pod list), helios:FILE (cluster_log.csv) or philly:FILE (cluster_job_log)")
	f.StringVar(&clusterSpec, "cluster", "", "agents=N,cpu=64,mem=256g,cuda.shares=8[,max_kernels=N], a JSON file, or openb:FILE (the trace's node list)")
	f.Float64Var(&scaleNodes, "scale-nodes", 1, "with --cluster openb:FILE: the fraction of the nodes kept (0.01), or above 1 a node count; each node shape keeps its share")
	f.StringArrayVar(&sets, "set", nil, "KEY=VALUE: group.sequencer=drf, group.selector=dispersed, user.max_slots.cuda.shares=8, … (repeatable)")
	f.StringArrayVar(&compare, "compare", nil, "KEY=V1,V2,…: run each value on the same workload (repeatable: cross product)")
	f.Uint64Var(&seed, "seed", 1, "seed of the sim agents, and of --generate unless it names seed=")
	f.DurationVar(&horizon, "horizon", 0, "stop at this virtual time (0: when every session has ended)")
	f.StringVar(&classes, "classes", "", "size classes of the waits, as ascending GPU bounds: 0,1,4,8 (the default) is cpu-only, <=1, 2-4, 5-8 and >8 GPUs")
	f.StringVar(&limits, "limits", "", "time limits for the workload's sessions: runtime (each its own run time), factor:F (F times it) or none; default: the workload's own (imported traces have none, and reserve then behaves as skip)")
	f.DurationVar(&timeout, "timeout", 0, "stop after this much wall time, reporting what ran, marked partial, and exiting 1 (Ctrl-C does the same)")
	f.StringVar(&from, "from", "", "load the live cluster of the manager at this address (SOKOVAN_TOKEN, admin) and print each pending session's estimated start")
	f.DurationVar(&tick, "tick", 0, "handle events only at multiples of this virtual time: faster, and every wait longer by up to it (0: at their exact instants)")
	f.IntVar(&samples, "samples", 200, "points of the utilisation series")
	f.DurationVar(&window, "window", 0, "also report each user's share of GPU-hours (else cpu-hours), Jain and utilisation per window this wide, such as 6h")
	f.StringVarP(&outJSON, "output", "o", "", "write the JSON report here")
	f.StringVar(&outHTML, "html", "", "write a self-contained HTML report here")
	f.StringVar(&outSessions, "sessions", "", "write each session's submit, start, end, wait (censored for never-started ones), status, agents and end reason here: JSON lines, or CSV for a .csv name")
	f.StringVar(&saveWorkload, "save-workload", "", "write the workload run (generated or imported) as JSONL here")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the simulation here")
	f.BoolVar(&progress, "progress", false, "print progress on stderr even when it is not a terminal")
	cmd.AddCommand(newSimulateImportCmd())
	return cmd
}

func loadWorkload(reg *domain.Registry, cl simulate.Cluster, file, generate, importSpec string, seed uint64, seedSet bool,
	stderr io.Writer) (simulate.Workload, string, error) {
	switch {
	case file != "":
		f, err := os.Open(file)
		if err != nil {
			return simulate.Workload{}, "", err
		}
		defer f.Close()
		w, err := simulate.ReadWorkload(f, reg)
		if err != nil {
			return simulate.Workload{}, "", fmt.Errorf("%s: %w", file, err)
		}
		return w, file, nil
	case generate != "":
		g, err := simulate.ParseGenSpec(generate)
		if err != nil {
			return simulate.Workload{}, "", err
		}
		if seedSet && !strings.Contains(generate, "seed=") {
			g.Seed = seed
		}
		w, err := simulate.Generate(g, cl, reg)
		return w, "generated: " + generate, err
	default:
		format, file, ok := strings.Cut(importSpec, ":")
		if !ok {
			return simulate.Workload{}, "", fmt.Errorf("--import %q: want FORMAT:FILE", importSpec)
		}
		f, err := os.Open(file)
		if err != nil {
			return simulate.Workload{}, "", err
		}
		defer f.Close()
		var w simulate.Workload
		var st simulate.ImportStats
		switch format {
		case "openb":
			w, st, err = simulate.ImportOpenB(f, reg, "cuda.shares")
		case "helios":
			w, st, err = simulate.ImportHelios(f, reg, "cuda.shares")
		case "philly":
			w, st, err = simulate.ImportPhilly(f, reg, "cuda.shares")
		default:
			return simulate.Workload{}, "", fmt.Errorf("--import: unknown format %q (openb, helios or philly)", format)
		}
		if err != nil {
			return simulate.Workload{}, "", fmt.Errorf("%s: %w", file, err)
		}
		fmt.Fprintf(stderr, "simulate: imported %d of %d rows (dropped: %v)\n", st.Kept, st.Rows, st.Dropped)
		return w, importSpec, nil
	}
}

func writeFile(path string, write func(io.Writer) error) error {
	if path == "-" {
		return write(os.Stdout)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// isTerminal reports whether f is a character device, which is what a
// terminal is; good enough to decide whether a \r progress line helps.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// newSimulateImportCmd is `sokovan simulate import FORMAT:FILE`: the
// import alone, its workload written as JSON lines to run later (with
// --workload), edit or share.
func newSimulateImportCmd() *cobra.Command {
	var out, limits string
	cmd := &cobra.Command{
		Use:     "import FORMAT:FILE",
		Short:   "Import a public trace as a workload file without running it",
		Example: "  sokovan simulate import openb:openb_pod_list_default.csv --limits factor:2 -o openb.jsonl",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			w, _, err := loadWorkload(domain.DefaultRegistry(), simulate.Cluster{}, "", "", args[0], 0, false, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if err := simulate.ApplyLimits(&w, limits); err != nil {
				return err
			}
			if out == "" {
				return w.WriteJSONL(cmd.OutOrStdout())
			}
			return writeFile(out, w.WriteJSONL)
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the workload here (default: stdout)")
	cmd.Flags().StringVar(&limits, "limits", "", "time limits: runtime, factor:F or none (see simulate --limits)")
	return cmd
}

// writeReport prints the report's table and writes the files asked for;
// a run that stopped early is an error once everything is written.
func writeReport(out io.Writer, rep simulate.Report, variants int, outJSON, outHTML, outSessions string) error {
	if err := rep.WriteTable(out); err != nil {
		return err
	}
	if outJSON != "" {
		if err := writeFile(outJSON, rep.WriteJSON); err != nil {
			return err
		}
	}
	if outHTML != "" {
		if err := writeFile(outHTML, rep.WriteHTML); err != nil {
			return err
		}
	}
	if outSessions != "" {
		write := rep.WriteSessionsJSONL
		if strings.HasSuffix(outSessions, ".csv") {
			write = rep.WriteSessionsCSV
		}
		if err := writeFile(outSessions, write); err != nil {
			return err
		}
	}
	for _, v := range rep.Variants {
		if v.Partial != "" {
			return fmt.Errorf("the run stopped early (%s): what it had is reported, marked partial", v.Partial)
		}
	}
	if len(rep.Variants) < variants {
		return fmt.Errorf("the run stopped early: %d of %d variants ran", len(rep.Variants), variants)
	}
	return nil
}

// startCPUProfile profiles the run into path, if one is given; stop
// ends it.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// parseClasses reads --classes; empty leaves the default classes.
func parseClasses(spec string) ([]float64, error) {
	if spec == "" {
		return nil, nil
	}
	return simulate.ParseClasses(spec)
}

// withTimeout bounds ctx by --timeout, when one is given.
func withTimeout(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeoutCause(ctx, timeout, fmt.Errorf("--timeout %s passed", timeout))
}
