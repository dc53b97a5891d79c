package process

import (
	"fmt"
	"net"
	"os/exec"
	"sort"
	"strconv"
	"strings"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
)

// Entry says how to run one image, or every image behind a prefix.
type Entry struct {
	// Usage is how the image is written when the catalog is listed in an
	// error ("exit:N"); empty means the catalog key.
	Usage string
	// Program is the executable. A name without a slash is looked up in the
	// agent's PATH when the image is pulled and again when a kernel starts.
	Program string
	// Pattern is how the manager matches images against the entry, as
	// domain.Agent.MayRun reads it ("exit:{0-255}"), so it refuses at
	// submit what Param would refuse at pull; empty means the prefix
	// followed by "*", any rest.
	Pattern string
	// Param checks what follows a prefix ("3" in "exit:3") when the image is
	// pulled; its error becomes the detail of an UnknownImageError. Nil
	// accepts anything. Exact entries get "".
	Param func(param string) error
	// Args builds the arguments after Program for one kernel. Nil means
	// none.
	Args func(param string, spec runtime.Spec) ([]string, error)
}

// Catalog maps image names to how to run them. It is a plain value: build
// one, or start from DefaultCatalog and add to its maps, before New.
type Catalog struct {
	// Images are matched by exact name.
	Images map[string]Entry
	// Prefixes are matched when no exact name does, longest prefix first;
	// the entry sees the rest of the name as its param.
	Prefixes map[string]Entry
}

// HTTPEchoArg is the argv contract for the http-echo image. Its kernels run
//
//	SELF HTTPEchoArg HOST:PORT
//
// where SELF is the selfExe given to DefaultCatalog. The binary behind SELF
// must hand its arguments to RunChild before anything else parses them, and
// exit with the code RunChild returns when it reports it handled them.
const HTTPEchoArg = "__sokovan_http_echo"

// DefaultCatalog returns the images dev mode offers (shared/API.md):
//
//   - sleep: runs until terminated (sleep infinity).
//   - exit:N: exits with code N (0-255) after SOKOVAN_EXIT_AFTER seconds
//     from the kernel's environment, 1 when unset. Any other N is an
//     unknown image.
//   - http-echo: serves HTTP on Spec.BindHost:Spec.Port, answering every
//     request with a JSON echo of it, by re-executing selfExe as
//     HTTPEchoArg describes.
//
// Each says what it does in its log first (and http-echo logs every
// request), so a user's first `sokovan session logs` shows something.
func DefaultCatalog(selfExe string) Catalog {
	return Catalog{
		Images: map[string]Entry{
			"sleep": {
				Program: "sh",
				// A line first, so a user reading the logs of a session
				// that "does nothing" sees it is doing what it should; exec
				// then leaves sleep alone to receive the stop signal.
				Args: func(string, runtime.Spec) ([]string, error) {
					return []string{"-c", `echo "sleep: sleeping until the session is terminated"; exec sleep infinity`, "sleep"}, nil
				},
			},
			"http-echo": {
				Program: selfExe,
				Args: func(_ string, spec runtime.Spec) ([]string, error) {
					if spec.Port == 0 {
						return nil, fmt.Errorf("%w: image http-echo needs a port", runtime.ErrInvalidSpec)
					}
					return []string{HTTPEchoArg, net.JoinHostPort(spec.ServiceHost(), strconv.Itoa(spec.Port))}, nil
				},
			},
		},
		Prefixes: map[string]Entry{
			"exit:": {
				Usage:   "exit:N",
				Pattern: "exit:{0-255}",
				Program: "sh",
				Param:   func(p string) error { _, err := runtime.ParseExitCode(p); return err },
				Args: func(p string, _ runtime.Spec) ([]string, error) {
					code, err := runtime.ParseExitCode(p)
					if err != nil {
						return nil, err
					}
					script := fmt.Sprintf(`echo "exit:%[1]d: exiting with %[1]d after ${SOKOVAN_EXIT_AFTER:-1}s"
%[2]s
exit %[1]d`, code, runtime.ExitAfterSh(code))
					return []string{"-c", script, "exit:" + p}, nil
				},
			},
		},
	}
}

// Patterns lists the catalog as the manager matches images against it:
// exact names, and each prefix's Pattern or the prefix followed by "*",
// sorted.
func (c Catalog) Patterns() []string {
	out := make([]string, 0, len(c.Images)+len(c.Prefixes))
	for name := range c.Images {
		out = append(out, name)
	}
	for prefix, e := range c.Prefixes {
		if e.Pattern != "" {
			out = append(out, e.Pattern)
		} else {
			out = append(out, prefix+"*")
		}
	}
	sort.Strings(out)
	return out
}

// Known lists the images the catalog accepts, sorted, as Usage writes them.
func (c Catalog) Known() []string {
	var out []string
	for name, e := range c.Images {
		out = append(out, usage(name, e))
	}
	for prefix, e := range c.Prefixes {
		if e.Usage == "" {
			out = append(out, prefix+"*")
		} else {
			out = append(out, e.Usage)
		}
	}
	sort.Strings(out)
	return out
}

func usage(name string, e Entry) string {
	if e.Usage != "" {
		return e.Usage
	}
	return name
}

// resolve finds the entry for image and checks its param; the error is an
// *runtime.UnknownImageError.
func (c Catalog) resolve(image string) (Entry, string, error) {
	if e, ok := c.Images[image]; ok {
		if e.Param != nil {
			if err := e.Param(""); err != nil {
				return Entry{}, "", &runtime.UnknownImageError{Image: image, Known: c.Known(), Detail: err.Error()}
			}
		}
		return e, "", nil
	}
	best := ""
	for prefix := range c.Prefixes {
		if strings.HasPrefix(image, prefix) && len(prefix) > len(best) {
			best = prefix
		}
	}
	if best == "" {
		return Entry{}, "", &runtime.UnknownImageError{Image: image, Known: c.Known()}
	}
	e, param := c.Prefixes[best], strings.TrimPrefix(image, best)
	if e.Param != nil {
		if err := e.Param(param); err != nil {
			return Entry{}, "", &runtime.UnknownImageError{Image: image, Known: c.Known(), Detail: err.Error()}
		}
	}
	return e, param, nil
}

// check resolves image and makes sure its program can be found, which is
// all "pulling" means for local processes.
func (c Catalog) check(image string) error {
	e, _, err := c.resolve(image)
	if err != nil {
		return err
	}
	if _, err := exec.LookPath(e.Program); err != nil {
		return fmt.Errorf("%w: image %q: program %q: %w", runtime.ErrPullFailed, image, e.Program, err)
	}
	return nil
}
