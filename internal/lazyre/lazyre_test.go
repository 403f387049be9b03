package lazyre

import "testing"

func TestCompiledOnceOnFirstUse(t *testing.T) {
	re := New(`^[a-z]+$`)
	first := re()
	if !first.MatchString("dsh") || first.MatchString("DSH") {
		t.Fatalf("%v does not match as its expression says", first)
	}
	if re() != first {
		t.Error("a second call compiled the expression again")
	}
}

func TestBadExpressionPanicsOnFirstUse(t *testing.T) {
	re := New(`(`) // New itself must not compile (nor panic)
	defer func() {
		if recover() == nil {
			t.Error("a bad expression did not panic on its first use")
		}
	}()
	re()
}
