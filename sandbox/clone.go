package sandbox

import "reflect"

// Clone returns a deep copy of s: no slice, map or pointer of the copy
// (the runtime-spec types' included) is shared with s, so either may be
// changed without the other seeing it. A Spec is data, so a copy by
// reflection is complete by construction: a field added later is copied
// deeply too.
func (s *Spec) Clone() *Spec {
	if s == nil {
		return nil
	}
	return deepCopy(reflect.ValueOf(s)).Interface().(*Spec)
}

// deepCopy copies v and everything it points to. A Spec holds no
// channels, functions or cycles.
func deepCopy(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		c := reflect.New(v.Type().Elem())
		c.Elem().Set(deepCopy(v.Elem()))
		return c
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			c.Index(i).Set(deepCopy(v.Index(i)))
		}
		return c
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		c := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			c.SetMapIndex(deepCopy(it.Key()), deepCopy(it.Value()))
		}
		return c
	case reflect.Struct:
		c := reflect.New(v.Type()).Elem()
		c.Set(v) // unexported fields, if a type has any, by value
		for i := range v.NumField() {
			if c.Field(i).CanSet() {
				c.Field(i).Set(deepCopy(v.Field(i)))
			}
		}
		return c
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		c := reflect.New(v.Type()).Elem()
		c.Set(deepCopy(v.Elem()))
		return c
	}
	return v
}
