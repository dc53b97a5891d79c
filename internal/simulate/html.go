package simulate

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// palette is colour-blind safe (Okabe and Ito).
var palette = []string{"#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"}

// WriteHTML writes a self-contained page: no script, no external file, the
// plots as inline SVG.
func (rep Report) WriteHTML(w io.Writer) error {
	b := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>sokovan simulate report</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1150px}
h1{font-size:20px}h2{font-size:17px;margin-top:32px;border-top:1px solid #ccc;padding-top:12px}
table{border-collapse:collapse;margin:8px 0}td,th{padding:3px 8px;border-bottom:1px solid #e3e3e3;text-align:right}
th:first-child,td:first-child{text-align:left}.plots{display:flex;flex-wrap:wrap;gap:16px}
figure{margin:0}figcaption{font-weight:600;margin-bottom:4px}svg text{font:11px system-ui,sans-serif;fill:#333}
.muted{color:#666}
</style></head><body>
`)
	p("<h1>sokovan simulate</h1>\n<p>Workload: %s, %d sessions over %s of submissions. Cluster: %d agents, %s.</p>\n",
		html.EscapeString(rep.Workload.Source), rep.Workload.Sessions, fmtSeconds(rep.Workload.SpanS), rep.Cluster.Agents,
		html.EscapeString(capacityText(rep.Cluster.Capacity)))
	p("<h2>Variants side by side</h2>\n<pre>")
	var tb strings.Builder
	_ = rep.WriteTable(&tb)
	p("%s</pre>\n", html.EscapeString(tb.String()))
	p(`<p class="muted">util: mean share of GPU held; frag: mean share of free GPUs that no waiting session could use (instants with a GPU free and a GPU session waiting); wait: submit to RUNNING; jain: Jain's index over users' dominant shares (whole run; mean over time among live users); bsld: bounded slowdown, threshold %gs.</p>`+"\n", SlowdownThreshold.Seconds())
	for _, v := range rep.Variants {
		p("<h2>%s</h2>\n", html.EscapeString(v.Name))
		p("<table><tr><th>class</th><th>sessions</th><th>started</th><th>wait p50</th><th>p95</th><th>p99</th><th>max</th><th>mean</th></tr>\n")
		for _, c := range v.Classes {
			p("<tr><td>%s</td><td>%d</td><td>%d</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n",
				html.EscapeString(c.Name), c.Sessions, c.Started, fmtSeconds(c.Wait.P50), fmtSeconds(c.Wait.P95),
				fmtSeconds(c.Wait.P99), fmtSeconds(c.Wait.Max), fmtSeconds(c.Wait.Mean))
		}
		p("</table>\n<p>Status: %s. Makespan %s. Bounded slowdown mean %.2f, p95 %.2f, max %.2f. Jain %.3f overall, %.3f over time (%d users).",
			html.EscapeString(statusText(v.Status)), fmtSeconds(v.MakespanS), v.Slowdown.Mean, v.Slowdown.P95, v.Slowdown.Max,
			v.Fairness.Overall, v.Fairness.OverTime, v.Fairness.Users)
		if f := v.Fragmentation; f != nil && f.Instants > 0 {
			p(" GPU fragmentation %.1f%% (mean of %d instants).", 100*f.Mean, f.Instants)
		}
		if g := v.BiggestGang; g != nil {
			p(" Biggest gang: %d kernels, %d sessions, %d started, worst wait %s.", g.ClusterSize, g.Sessions, g.Started, fmtSeconds(g.WorstWaitS))
		}
		p("</p>\n<div class=\"plots\">\n")
		writeUtilPlot(b, v.Utilisation)
		writeCDFPlot(b, v.Classes)
		p("</div>\n")
	}
	p("</body></html>\n")
	return b.Flush()
}

const (
	plotW, plotH               = 540, 300
	padL, padR, padT, padB     = 52, 12, 10, 40
	innerW, innerH             = plotW - padL - padR, plotH - padT - padB
	legendRowH, legendColWidth = 16, 130
)

type series struct {
	name string
	xs   []float64
	ys   []float64
}

func writeUtilPlot(w io.Writer, u Utilisation) {
	var ss []series
	n := 0
	for _, s := range u.Slots {
		xs := make([]float64, len(s.Series))
		for i := range xs {
			xs[i] = (float64(i) + 0.5) * u.IntervalS / 3600
		}
		ss = append(ss, series{name: fmt.Sprintf("%s (mean %.0f%%)", s.Slot, 100*s.Mean), xs: xs, ys: s.Series})
		n = max(n, len(s.Series))
	}
	xmax := float64(n) * u.IntervalS / 3600
	plot(w, "Utilisation over time", "virtual time (hours)", "share held", ss, xmax, 1, false)
}

func writeCDFPlot(w io.Writer, classes []Class) {
	var ss []series
	xmax := 1.0
	for _, c := range classes {
		if len(c.CDF) == 0 {
			continue
		}
		s := series{name: fmt.Sprintf("%s (%d)", c.Name, c.Started)}
		for _, pt := range c.CDF {
			s.xs = append(s.xs, math.Log10(1+pt[0]))
			s.ys = append(s.ys, pt[1])
			xmax = max(xmax, math.Log10(1+pt[0]))
		}
		ss = append(ss, s)
	}
	plot(w, "Wait CDF per size class", "wait (log scale)", "fraction started", ss, math.Ceil(xmax), 1, true)
}

// plot draws lines in a box with axes; logX labels the x ticks as
// seconds from log10(1+s).
func plot(w io.Writer, title, xlabel, ylabel string, ss []series, xmax, ymax float64, logX bool) {
	rows := (len(ss) + 3) / 4
	h := plotH + rows*legendRowH
	fmt.Fprintf(w, "<figure><figcaption>%s</figcaption><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n",
		html.EscapeString(title), plotW, h, plotW, h)
	fmt.Fprintf(w, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#fafafa\" stroke=\"#999\"/>\n", padL, padT, innerW, innerH)
	if xmax <= 0 {
		xmax = 1
	}
	x := func(v float64) float64 { return padL + v/xmax*innerW }
	y := func(v float64) float64 { return padT + innerH - v/ymax*innerH }
	for i := 0; i <= 4; i++ {
		v := ymax * float64(i) / 4
		fmt.Fprintf(w, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e0e0e0\"/><text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.0f%%</text>\n",
			padL, padL+innerW, y(v), y(v), padL-4, y(v)+4, 100*v)
	}
	if logX {
		// Ticks at 0 and at powers of ten seconds, placed on the
		// log10(1+s) axis the lines use.
		for d := -1.0; d < xmax; d++ {
			secs := 0.0
			if d >= 0 {
				secs = math.Pow(10, d)
			}
			at := math.Log10(1 + secs)
			fmt.Fprintf(w, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#e0e0e0\"/><text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
				x(at), x(at), padT, padT+innerH, x(at), padT+innerH+14, fmtSeconds(secs))
		}
	} else {
		step := niceStep(xmax / 6)
		for v := 0.0; v <= xmax+1e-9; v += step {
			fmt.Fprintf(w, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#e0e0e0\"/><text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n",
				x(v), x(v), padT, padT+innerH, x(v), padT+innerH+14, math.Round(v*100)/100)
		}
	}
	fmt.Fprintf(w, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", padL+innerW/2, padT+innerH+30, html.EscapeString(xlabel))
	fmt.Fprintf(w, "<text transform=\"translate(12 %d) rotate(-90)\" text-anchor=\"middle\">%s</text>\n", padT+innerH/2, html.EscapeString(ylabel))
	for i, s := range ss {
		var pts strings.Builder
		for j := range s.xs {
			fmt.Fprintf(&pts, "%.1f,%.1f ", x(s.xs[j]), y(min(s.ys[j], ymax)))
		}
		c := palette[i%len(palette)]
		fmt.Fprintf(w, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.6\" points=\"%s\"/>\n", c, strings.TrimSpace(pts.String()))
		lx := 8 + (i%4)*legendColWidth
		ly := plotH + (i/4)*legendRowH + 4
		fmt.Fprintf(w, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"3\" fill=\"%s\"/><text x=\"%d\" y=\"%d\">%s</text>\n",
			lx, ly, c, lx+16, ly+5, html.EscapeString(s.name))
	}
	fmt.Fprintln(w, "</svg></figure>")
}

func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*mag {
			return m * mag
		}
	}
	return 10 * mag
}

func statusText(m map[string]int) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func capacityText(m map[string]string) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, k+" "+m[k])
	}
	return strings.Join(parts, ", ")
}
