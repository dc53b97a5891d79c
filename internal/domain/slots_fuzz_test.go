package domain

import "testing"

// FuzzParseQuantity feeds arbitrary text to ParseQuantity for every kind.
// Quantities arrive from users and from the store, so the parser must never
// panic, must never produce a negative amount, and whatever it accepts must
// survive a FormatQuantity/ParseQuantity round trip unchanged: the store
// writes with one and reads with the other.
func FuzzParseQuantity(f *testing.F) {
	for _, s := range []string{
		"2", "0.5", "1.25", "0.001", "0.0005", "4g", "512m", "1.5G", "1024", "0.5k",
		"8191p", "8192p", "9000000p", "99999999999999999999", "9223372036854775807",
		"9223372036854775.807", "9223372036854775.808", "-1", "+2", "+", ".", "1.",
		".5", "NaN", "Inf", "1e3", "", " ", " 2 ", "2x", "0x10", "1_000", "١",
	} {
		f.Add(s)
	}
	kinds := []Kind{KindCount, KindBytes, KindShares}
	f.Fuzz(func(t *testing.T, s string) {
		for _, k := range kinds {
			v, err := ParseQuantity(k, s)
			if err != nil {
				continue
			}
			if v < 0 {
				t.Fatalf("ParseQuantity(%v, %q) = %d, want a non-negative quantity", k, s, v)
			}
			out := FormatQuantity(k, v)
			back, err := ParseQuantity(k, out)
			if err != nil {
				t.Fatalf("ParseQuantity(%v, %q) = %d, but its formatting %q does not parse: %v", k, s, v, out, err)
			}
			if back != v {
				t.Fatalf("ParseQuantity(%v, %q) = %d, formatted %q, read back as %d", k, s, v, out, back)
			}
		}
	})
}
