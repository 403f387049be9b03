package httpauth

import "testing"

func TestToken(t *testing.T) {
	for h, want := range map[string]string{"Bearer tok": "tok", "bearer tok ": "tok", "BEARER tok": "tok", "Bearer ": "", "tok": "", "Basic dG9r": "", "": ""} {
		if got := Token(h); got != want {
			t.Errorf("Token(%q) = %q, want %q", h, got, want)
		}
	}
}

func TestEqual(t *testing.T) {
	for _, tc := range []struct {
		got, want string
		eq        bool
	}{{"tok", "tok", true}, {"tok", "tok2", false}, {"", "", false}, {"tok", "", false}, {"", "tok", false}} {
		if Equal(tc.got, tc.want) != tc.eq {
			t.Errorf("Equal(%q, %q) = %v", tc.got, tc.want, !tc.eq)
		}
	}
}
