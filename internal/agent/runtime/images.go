package runtime

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// Images is the book every runtime keeps of its images: which Pull has
// made available, and which pulls are under way. An image is pulled once:
// pulls of it that arrive while one is under way wait for that one's
// outcome, and each pull reports image_pull_started and then image_pull_finished or
// image_pull_failed once.
type Images struct {
	out *Outbox
	now func() time.Time

	mu     sync.Mutex
	closed bool
	have   map[string]bool
	pulls  map[string]*Pull
}

// Pull is one pull under way.
type Pull struct {
	image string
	done  chan struct{}
	err   error
	// retry: it failed because its caller gave up, not because of the
	// image, so a caller still waiting pulls again itself.
	retry bool
}

// NewImages returns an empty book that reports pulls through out, stamping
// with now.
func NewImages(out *Outbox, now func() time.Time) *Images {
	return &Images{out: out, now: now, have: make(map[string]bool), pulls: make(map[string]*Pull)}
}

// Pull is Runtime.Pull for runtimes whose pull runs in the caller: fetch
// makes the image available, returning a note for image_pull_finished. A pull
// whose fetch failed because its ctx ended is not the image's fault: a
// concurrent Pull of the same image that is still waiting tries again.
func (im *Images) Pull(ctx context.Context, image string, fetch func(context.Context) (string, error)) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		p, first, err := im.Begin(image)
		if err != nil || p == nil {
			return err
		}
		if first {
			msg, err := fetch(ctx)
			im.finish(p, msg, err, err != nil && ctx.Err() != nil)
			return err
		}
		select {
		case <-p.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		if !p.retry {
			return p.err
		}
	}
}

// Begin starts a pull of image, or joins the one under way. It returns a
// nil Pull when the image is available already, ErrClosed after Close.
// When first is true the caller owns the new pull, reported as started,
// and must end it with Finish.
func (im *Images) Begin(image string) (p *Pull, first bool, err error) {
	im.mu.Lock()
	defer im.mu.Unlock()
	if im.closed {
		return nil, false, ErrClosed
	}
	if im.have[image] {
		return nil, false, nil
	}
	if p := im.pulls[image]; p != nil {
		return p, false, nil
	}
	p = &Pull{image: image, done: make(chan struct{})}
	im.pulls[image] = p
	im.out.Emit(domain.KernelEvent{Kind: domain.EventImagePullStarted, At: im.now(), Image: image})
	return p, true, nil
}

// Finish ends p: the image is available when err is nil, and the outcome
// is reported with msg as image_pull_finished's note. A pull Cancel ended first
// is left as it is.
func (im *Images) Finish(p *Pull, msg string, err error) { im.finish(p, msg, err, false) }

func (im *Images) finish(p *Pull, msg string, err error, retry bool) {
	im.mu.Lock()
	defer im.mu.Unlock()
	if im.pulls[p.image] != p {
		return
	}
	delete(im.pulls, p.image)
	if err != nil {
		im.out.Emit(domain.KernelEvent{Kind: domain.EventImagePullFailed, At: im.now(), Image: p.image, Message: err.Error()})
	} else {
		im.have[p.image] = true
		im.out.Emit(domain.KernelEvent{Kind: domain.EventImagePullFinished, At: im.now(), Image: p.image, Message: msg})
	}
	p.err, p.retry = err, retry
	close(p.done)
}

// Wait waits for p's outcome, or for ctx.
func (p *Pull) Wait(ctx context.Context) error {
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Have reports whether image is available.
func (im *Images) Have(image string) bool {
	im.mu.Lock()
	defer im.mu.Unlock()
	return im.have[image]
}

// Add records image as available without a pull, for an image the runtime
// found there; nothing is reported.
func (im *Images) Add(image string) {
	im.mu.Lock()
	defer im.mu.Unlock()
	im.have[image] = true
}

// List is Runtime.Images: the available images, sorted.
func (im *Images) List() []string {
	im.mu.Lock()
	defer im.mu.Unlock()
	return slices.Sorted(maps.Keys(im.have))
}

// Close refuses later pulls with ErrClosed. Pulls under way go on to their
// end; Cancel ends them at once.
func (im *Images) Close() {
	im.mu.Lock()
	defer im.mu.Unlock()
	im.closed = true
}

// Cancel ends every pull under way with ErrClosed, reporting nothing, and
// returns their images, sorted, so the runtime can stop its work on them;
// their Finish is then ignored.
func (im *Images) Cancel() []string {
	im.mu.Lock()
	defer im.mu.Unlock()
	images := slices.Sorted(maps.Keys(im.pulls))
	for _, image := range images {
		p := im.pulls[image]
		delete(im.pulls, image)
		p.err = fmt.Errorf("pull %q: %w", image, ErrClosed)
		close(p.done)
	}
	return images
}
