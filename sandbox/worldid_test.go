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

// A driver opened with an ID (execworld names every world it opens)
// mints none: the reservation is left to the world it was made for.
func TestResolveWithAnIDLeavesTheReservation(t *testing.T) {
	r := ReserveWorldID()
	defer NewWorldID() // takes it, whatever the outcome
	id, _, err := (&OpenOptions{ID: "named"}).Resolve(&Spec{})
	if err != nil || id != "named" {
		t.Fatalf("Resolve with ID %q = %q, %v; want that ID", "named", id, err)
	}
	if got := NewWorldID(); got != r {
		t.Errorf("NewWorldID after Resolve with an ID = %q, want the reservation %q", got, r)
	}
	if id, _, err := (&OpenOptions{}).Resolve(&Spec{}); err != nil || CheckWorldID(id) != nil {
		t.Errorf("Resolve without an ID = %q, %v; want a fresh, valid ID", id, err)
	}
}
