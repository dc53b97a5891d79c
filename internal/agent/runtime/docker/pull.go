package docker

import (
	"context"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/client"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
)

// PullError says why an image could not be pulled. It matches
// runtime.ErrUnknownImage when Unknown is set, runtime.ErrPullFailed
// otherwise, and unwraps to the engine's error.
type PullError struct {
	Image string
	// Unknown: pulling again cannot help (no such repository or tag,
	// access refused, malformed reference). Otherwise the failure may be
	// passing (registry or engine unreachable, cancelled) and the manager
	// may retry.
	Unknown bool
	// Why says, for people, what the engine's error means.
	Why string
	Err error
}

func (e *PullError) Error() string {
	kind := "pull failed"
	if e.Unknown {
		kind = "unknown image"
	}
	return fmt.Sprintf("image %q: %s: %s: %v", e.Image, kind, e.Why, e.Err)
}

// Is makes errors.Is match ErrUnknownImage or ErrPullFailed as Unknown
// says.
func (e *PullError) Is(target error) bool {
	if e.Unknown {
		return target == runtime.ErrUnknownImage
	}
	return target == runtime.ErrPullFailed
}

func (e *PullError) Unwrap() error { return e.Err }

// classifyPull decides whether a pull failure is final, from the error
// class the engine's HTTP status maps to.
func classifyPull(ctx context.Context, image string, err error) *PullError {
	e := &PullError{Image: image, Err: err}
	switch {
	case ctx.Err() != nil:
		e.Why = "the pull was cancelled"
	case cerrdefs.IsNotFound(err):
		e.Unknown, e.Why = true, "the registry has no such repository or tag"
	case cerrdefs.IsUnauthorized(err), cerrdefs.IsPermissionDenied(err):
		// Registries answer this for repositories that do not exist as
		// well as for private ones; either way retrying will not help.
		e.Unknown, e.Why = true, "the registry refused access (no such repository, or it needs credentials this agent lacks)"
	case cerrdefs.IsInvalidArgument(err):
		e.Unknown, e.Why = true, "the engine refused the image reference"
	default:
		e.Why = "the engine could not pull it"
	}
	return e
}

// Pull asks the engine to pull image from its registry, unless the engine
// already holds it. The first Pull of an image on this runtime reports
// image_pull_started, then image_pull_finished or image_pull_failed; later ones of an image
// already pulled return at once. The pull runs as long as ctx allows.
func (r *Runtime) Pull(ctx context.Context, image string) error {
	return r.images.Pull(ctx, image, func(ctx context.Context) (string, error) {
		return r.pull(ctx, image)
	})
}

// pull does Pull's engine work; msg tells how the image came to be there.
func (r *Runtime) pull(ctx context.Context, image string) (msg string, err error) {
	// Checked here because the client's own parse error carries no error
	// class to classify.
	if _, err := reference.ParseNormalizedNamed(image); err != nil {
		return "", &PullError{Image: image, Unknown: true, Why: "not a valid image reference", Err: err}
	}
	present, err := r.imagePresent(ctx, image)
	if err != nil {
		return "", classifyPull(ctx, image, err)
	}
	if present {
		return "already present on the engine", nil
	}
	resp, err := r.cli.ImagePull(ctx, image, client.ImagePullOptions{})
	if err == nil {
		// The engine answers with a progress stream; a failure after the
		// stream began arrives in it, and Wait returns it.
		err = resp.Wait(ctx)
		resp.Close()
	}
	if err != nil {
		return "", classifyPull(ctx, image, err)
	}
	return "pulled from the registry", nil
}
