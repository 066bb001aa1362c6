package schema

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// Every JSON field of the Go payload types is described by the payload's
// JSON Schema, at the same place, so the two cannot drift apart silently.
func TestJSONSchemasDescribeTheGoTypes(t *testing.T) {
	cases := []struct {
		file  string
		types map[string]reflect.Type // property path ("" is the root) -> Go type
	}{
		{"jsonschema/paddle-subscription.json", map[string]reflect.Type{
			"":                 reflect.TypeFor[PaddleEvent](),
			"data":             reflect.TypeFor[PaddleSubscription](),
			"data.custom_data": reflect.TypeFor[PaddleSubscriptionData](),
		}},
		{"jsonschema/clerk-user.json", map[string]reflect.Type{
			"":                           reflect.TypeFor[ClerkEvent](),
			"data":                       reflect.TypeFor[ClerkUser](),
			"data.email_addresses.items": reflect.TypeFor[ClerkEmailAddress](),
		}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			b, err := JSONSchemas.ReadFile(c.file)
			if err != nil {
				t.Fatal(err)
			}
			var root map[string]any
			if err := json.Unmarshal(b, &root); err != nil {
				t.Fatalf("not JSON: %v", err)
			}
			if root["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
				t.Errorf("$schema = %v", root["$schema"])
			}
			for path, typ := range c.types {
				node := root
				if path != "" {
					for _, step := range strings.Split(path, ".") {
						if step == "items" {
							node, _ = node["items"].(map[string]any)
						} else {
							props, _ := node["properties"].(map[string]any)
							node, _ = props[step].(map[string]any)
						}
						if node == nil {
							t.Fatalf("no schema at %q", path)
						}
					}
				}
				props, _ := node["properties"].(map[string]any)
				for i := range typ.NumField() {
					name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
					if name == "" || name == "-" {
						continue
					}
					if _, ok := props[name]; !ok {
						t.Errorf("%s: field %s.%s (%q) is not in the schema at %q", c.file, typ.Name(), typ.Field(i).Name, name, path)
					}
				}
			}
		})
	}
}
