package sandbox

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// fullSpec returns a Spec in which every field down to the runtime-spec
// types' leaves is set (filled by reflection, so a field added later is
// covered without an edit).
func fullSpec() *Spec {
	s := DefaultSpec("/srv/app")
	fill(reflect.ValueOf(s).Elem(), 0)
	return s
}

// fill sets every nil pointer, slice and map under v to a value with one
// element, and every zero scalar to a non-zero one.
func fill(v reflect.Value, depth int) {
	if depth > 12 {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fill(v.Elem(), depth+1)
	case reflect.Slice:
		if v.Len() == 0 {
			v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		}
		for i := range v.Len() {
			fill(v.Index(i), depth+1)
		}
	case reflect.Map:
		if v.Len() == 0 {
			v.Set(reflect.MakeMap(v.Type()))
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fill(k, depth+1)
			fill(e, depth+1)
			v.SetMapIndex(k, e)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Field(i).CanSet() {
				fill(v.Field(i), depth+1)
			}
		}
	case reflect.String:
		if v.String() == "" {
			v.SetString("x")
		}
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.Int() == 0 {
			v.SetInt(1)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if v.Uint() == 0 {
			v.SetUint(1)
		}
	case reflect.Float32, reflect.Float64:
		if v.Float() == 0 {
			v.SetFloat(1)
		}
	}
}

// poke changes every leaf reachable from v, in place: through pointers,
// slice elements and map values.
func poke(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			poke(v.Elem())
		}
	case reflect.Slice:
		for i := range v.Len() {
			poke(v.Index(i))
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(it.Value())
			poke(e)
			v.SetMapIndex(it.Key(), e)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Field(i).CanSet() {
				poke(v.Field(i))
			}
		}
	case reflect.String:
		v.SetString(v.String() + "-changed")
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(v.Int() + 1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(v.Uint() + 1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(v.Float() + 1)
	}
}

func TestCloneEqualsOriginal(t *testing.T) {
	for name, s := range map[string]*Spec{
		"default": DefaultSpec("/srv/app"),
		"full":    fullSpec(),
		"zero":    {},
		"empty but not nil": {Env: []string{}, Labels: map[string]string{},
			Capabilities: &specs.LinuxCapabilities{Bounding: []string{}}},
	} {
		if d := cmp.Diff(s, s.Clone()); d != "" {
			t.Errorf("%s: clone differs from the original (-orig +clone):\n%s", name, d)
		}
	}
	if (*Spec)(nil).Clone() != nil {
		t.Error("Clone of a nil Spec is not nil")
	}
}

// TestCloneSharesNothing changes every leaf of a clone, through every
// pointer, slice and map, and finds the original as it was.
func TestCloneSharesNothing(t *testing.T) {
	orig := fullSpec()
	c := orig.Clone()
	poke(reflect.ValueOf(c))
	if d := cmp.Diff(fullSpec(), orig); d != "" {
		t.Errorf("changing the clone changed the original (-want +got):\n%s", d)
	}
	if cmp.Equal(orig, c) {
		t.Error("poke changed nothing: the test proves nothing")
	}
}
