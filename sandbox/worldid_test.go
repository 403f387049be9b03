package sandbox

import "testing"

// The next world minted after a reservation is the reserved one, once;
// then IDs are fresh again, and every one passes CheckWorldID.
func TestReserveWorldID(t *testing.T) {
	r := ReserveWorldID()
	if got := NewWorldID(); got != r {
		t.Fatalf("NewWorldID after ReserveWorldID = %q, want the reserved %q", got, r)
	}
	a, b := NewWorldID(), NewWorldID()
	if a == r || b == r || a == b {
		t.Errorf("IDs after the reserved one: %q %q (reserved %q), want fresh ones", a, b, r)
	}
	for _, id := range []string{r, a, b} {
		if err := CheckWorldID(id); err != nil {
			t.Error(err)
		}
	}
}
