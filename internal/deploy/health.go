package deploy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// probe is one health check's outcome.
type probe struct {
	ok      bool
	message string
	took    time.Duration
}

// check sends one GET of hc.Path to endpoint and judges it: healthy iff
// the answer is 200 within hc.Timeout.
func check(ctx context.Context, client *http.Client, endpoint string, hc domain.HealthCheck) probe {
	ctx, cancel := context.WithTimeout(ctx, hc.Timeout)
	defer cancel()
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+endpoint+hc.Path, nil)
	if err != nil {
		return probe{message: err.Error()}
	}
	resp, err := client.Do(req)
	took := time.Since(start)
	if err != nil {
		return probe{message: err.Error(), took: took}
	}
	// Drained (a little) so the connection can be reused by the next check.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return probe{message: fmt.Sprintf("GET %s answered %d", hc.Path, resp.StatusCode), took: took}
	}
	return probe{ok: true, took: took}
}
