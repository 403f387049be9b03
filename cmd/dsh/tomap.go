package main

import (
	"reflect"

	"github.com/dsh-dev/dsh/internal/config"
)

// toMap renders a Config as nested maps keyed by mapstructure tags, the
// shape of a configuration file.
func toMap(c config.Config) map[string]any {
	return structMap(reflect.ValueOf(c))
}

func structMap(v reflect.Value) map[string]any {
	m := map[string]any{}
	t := v.Type()
	for i := range t.NumField() {
		name := t.Field(i).Tag.Get("mapstructure")
		if name == "" {
			continue
		}
		f := v.Field(i)
		if f.Kind() == reflect.Struct {
			m[name] = structMap(f)
		} else {
			m[name] = f.Interface()
		}
	}
	return m
}
