package hubtest

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// HubEnvPrefix begins the name of every variable the hub reads; the
// variables beginning with TestEnvPrefix configure the tests instead.
const (
	HubEnvPrefix  = "HUB_"
	TestEnvPrefix = "HUB_TEST_"
)

// ClearEnv removes from the process environment every variable whose name
// begins with HUB_ (but not HUB_TEST_) or with one of prefixes, so that a
// shell set up for production (HUB_NATS_URL, HUB_ADMIN_ADDR, CREDITS_...)
// changes neither the configuration a test loads (service.LoadConfig, a
// command run in-process) nor a child process's (StartMain and
// StartBinary pass the test's environment on): call it first in the
// TestMain of a package whose tests read the environment. A test sets what
// it needs with t.Setenv.
func ClearEnv(prefixes ...string) {
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if ownedVar(name, prefixes) {
			_ = os.Unsetenv(name)
		}
	}
}

// ownedVar reports whether name is a variable of the hub (HUB_, not
// HUB_TEST_) or begins with one of prefixes.
func ownedVar(name string, prefixes []string) bool {
	if strings.HasPrefix(name, HubEnvPrefix) && !strings.HasPrefix(name, TestEnvPrefix) {
		return true
	}
	return slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(name, p) })
}

// Defaults sets every field of the struct spec points to from its
// envconfig `default` tag, as envconfig.Process does in an empty
// environment, without reading the environment: a test's configuration
// starts from the defaults, whatever the developer's shell exports.
// Fields tagged ignored:"true" are left alone; nested structs are filled
// field by field. A tag Defaults cannot parse fails the test.
func Defaults(t testing.TB, spec any) {
	t.Helper()
	v := reflect.ValueOf(spec)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		t.Fatalf("hubtest.Defaults: %T is not a pointer to a struct", spec)
	}
	if err := setDefaults(v.Elem()); err != nil {
		t.Fatalf("hubtest.Defaults: %v", err)
	}
}

func setDefaults(s reflect.Value) error {
	typ := s.Type()
	for i := range typ.NumField() {
		f, fv := typ.Field(i), s.Field(i)
		if !f.IsExported() || f.Tag.Get("ignored") == "true" {
			continue
		}
		def, ok := f.Tag.Lookup("default")
		if !ok {
			if fv.Kind() == reflect.Struct && f.Type != reflect.TypeFor[time.Time]() {
				if err := setDefaults(fv); err != nil {
					return err
				}
			}
			continue
		}
		if err := setValue(fv, def); err != nil {
			return fmt.Errorf("%s.%s: default %q: %w", typ, f.Name, def, err)
		}
	}
	return nil
}

func setValue(v reflect.Value, s string) error {
	if v.Type() == reflect.TypeFor[time.Duration]() {
		d, err := time.ParseDuration(s)
		v.SetInt(int64(d))
		return err
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		v.SetBool(b)
		return err
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(s, 0, v.Type().Bits())
		v.SetInt(n)
		return err
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(s, 0, v.Type().Bits())
		v.SetUint(n)
		return err
	case reflect.Float32, reflect.Float64:
		n, err := strconv.ParseFloat(s, v.Type().Bits())
		v.SetFloat(n)
		return err
	case reflect.Slice:
		if s == "" {
			return nil
		}
		parts := strings.Split(s, ",")
		sl := reflect.MakeSlice(v.Type(), len(parts), len(parts))
		for i, p := range parts {
			if err := setValue(sl.Index(i), p); err != nil {
				return err
			}
		}
		v.Set(sl)
	default:
		return fmt.Errorf("unsupported kind %s", v.Kind())
	}
	return nil
}
