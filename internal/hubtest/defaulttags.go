package hubtest

import (
	"reflect"
	"strconv"
	"testing"
	"time"
)

// RequireDefaultTags checks the envconfig default tags of spec (a struct or
// a pointer to one) against the constants the libraries default to: want
// maps a field name (promoted fields of embedded structs included) to the
// library's default, a string, an int or a time.Duration. envconfig tags
// must be literals, so each default a library also holds is written twice;
// this test keeps the two equal.
func RequireDefaultTags(t testing.TB, spec any, want map[string]any) {
	t.Helper()
	typ := reflect.TypeOf(spec)
	if typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	for name, w := range want {
		f, ok := typ.FieldByName(name)
		if !ok {
			t.Errorf("%s has no field %s", typ, name)
			continue
		}
		tag, ok := f.Tag.Lookup("default")
		if !ok {
			t.Errorf("%s.%s has no default tag", typ, name)
			continue
		}
		var got any
		var err error
		switch w.(type) {
		case time.Duration:
			got, err = time.ParseDuration(tag)
		case int:
			got, err = strconv.Atoi(tag)
		case string:
			got = tag
		default:
			t.Fatalf("RequireDefaultTags: %s: unsupported type %T", name, w)
		}
		if err != nil || got != w {
			t.Errorf("%s.%s: default tag %q, the library's default is %v", typ, name, tag, w)
		}
	}
}
