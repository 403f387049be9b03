package web

import (
	"context"
	"errors"
	"testing"
)

// fakeProvider is a Provider with fixed availability and answers.
type fakeProvider struct {
	id      string
	unavail error
	hits    map[string][]Source
	err     map[string]error
}

func (f *fakeProvider) ID() string       { return f.id }
func (f *fakeProvider) Available() error { return f.unavail }
func (f *fakeProvider) Search(ctx context.Context, q string, max int) ([]Source, error) {
	if err := f.err[q]; err != nil {
		return nil, err
	}
	h := f.hits[q]
	if len(h) > max {
		h = h[:max]
	}
	return h, nil
}

func TestRegistryDuplicateID(t *testing.T) {
	_, err := NewRegistry(&fakeProvider{id: "a"}, &fakeProvider{id: "b"}, &fakeProvider{id: "a"})
	if CodeOf(err) != CodeDuplicateProvider {
		t.Fatalf("NewRegistry(a, b, a) error = %v, want %s", err, CodeDuplicateProvider)
	}
}

func TestRegistrySelect(t *testing.T) {
	down := errors.New("no key")
	up := func(id string) Provider { return &fakeProvider{id: id} }
	off := func(id string) Provider { return &fakeProvider{id: id, unavail: down} }
	tests := []struct {
		name       string
		providers  []Provider
		configured string
		wantID     string
		wantCode   Code
	}{
		{"configured and available", []Provider{up("a"), up("b")}, "b", "b", ""},
		{"configured missing", []Provider{up("a")}, "zzz", "", CodeConfiguredMissing},
		{"configured unavailable, another usable", []Provider{off("a"), up("b")}, "a", "", CodeConfiguredUnavailable},
		{"none configured, one usable", []Provider{off("a"), up("b"), off("c")}, "", "b", ""},
		{"none configured, none usable", []Provider{off("a"), off("b")}, "", "", CodeUnavailable},
		{"none registered", nil, "", "", CodeUnavailable},
		{"none configured, several usable", []Provider{up("a"), off("b"), up("c")}, "", "", CodeAmbiguous},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewRegistry(tt.providers...)
			if err != nil {
				t.Fatal(err)
			}
			p, err := r.Select(tt.configured)
			if tt.wantCode != "" {
				if CodeOf(err) != tt.wantCode {
					t.Fatalf("Select(%q) = %v, %v; want %s", tt.configured, p, err, tt.wantCode)
				}
				return
			}
			if err != nil || p.ID() != tt.wantID {
				t.Fatalf("Select(%q) = %v, %v; want %s", tt.configured, p, err, tt.wantID)
			}
		})
	}
}

func TestRegistrySelectIsNotRegistrationOrder(t *testing.T) {
	// Two usable providers are ambiguous whichever registered first.
	for _, order := range [][]string{{"a", "b"}, {"b", "a"}} {
		r, _ := NewRegistry(&fakeProvider{id: order[0]}, &fakeProvider{id: order[1]})
		if _, err := r.Select(""); CodeOf(err) != CodeAmbiguous {
			t.Errorf("Select with %v registered = %v, want %s", order, err, CodeAmbiguous)
		}
	}
}

func TestRegistrySelectRechecksAvailability(t *testing.T) {
	p := &fakeProvider{id: "a", unavail: errors.New("no key")}
	r, _ := NewRegistry(p)
	if _, err := r.Select(""); CodeOf(err) != CodeUnavailable {
		t.Fatalf("Select before key = %v, want %s", err, CodeUnavailable)
	}
	p.unavail = nil
	if got, err := r.Select(""); err != nil || got != p {
		t.Fatalf("Select after key = %v, %v; want provider a", got, err)
	}
}
