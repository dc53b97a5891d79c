package runtime_test

import (
	"testing"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
)

// ParseExitCode is what every runtime's exit:N image reads, so the process,
// slurm and sim runtimes accept and refuse the same names.
func TestParseExitCode(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    int
		wantErr bool
	}{
		{in: "0", want: 0},
		{in: "3", want: 3},
		{in: "255", want: 255},
		{in: "007", want: 7}, // as sh's exit reads it
		{in: "256", wantErr: true},
		{in: "1000", wantErr: true},
		{in: "-1", wantErr: true},
		{in: "", wantErr: true},
		{in: "x", wantErr: true},
		{in: "1.5", wantErr: true},
	} {
		got, err := runtime.ParseExitCode(tc.in)
		if (err != nil) != tc.wantErr || !tc.wantErr && got != tc.want {
			t.Errorf("ParseExitCode(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}
