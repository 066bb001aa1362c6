package destination

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// The destinations file is decoded field by field (decodeFile), so that
// every problem is reported at once, each naming its destination, its
// field and its line, in the file's words: "want a whole number", never a
// Go type.

// specFields maps each field name of a destinations file entry to its
// index in Spec (its yaml tag).
var specFields = func() map[string]int {
	t := reflect.TypeFor[Spec]()
	out := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		out[name] = i
	}
	return out
}()

// secretFields are fields whose values are never quoted in an error.
var secretFields = map[string]bool{"headers": true, "secret_env": true, "url": true}

// decodeFile decodes data into its entries. It returns the problems of
// the file itself (not YAML, not a map with "destinations", more than one
// document) as one error, and those of the entries as FieldErrors: an
// entry with a problem is returned with the field left unset, and bad[i]
// lists the fields of entry i that did not decode.
func decodeFile(data []byte) (specs []Spec, bad map[int]map[string]bool, errs []error, fileErr error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := decode(dec, &doc); errors.Is(err, io.EOF) {
		return nil, nil, nil, nil // an empty file
	} else if err != nil {
		return nil, nil, nil, &FieldError{Reason: err.Error()}
	}
	var extra yaml.Node
	if err := decode(dec, &extra); err == nil {
		return nil, nil, nil, &FieldError{Reason: "the file holds more than one YAML document"}
	} else if !errors.Is(err, io.EOF) {
		return nil, nil, nil, &FieldError{Reason: err.Error()}
	}
	root := resolve(&doc)
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = resolve(root.Content[0])
	}
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil, nil, nil, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, nil, nil, &FieldError{Reason: fmt.Sprintf("line %d: want a map with a list under \"destinations:\", got %s", root.Line, kindOf(root, false))}
	}
	var list *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], resolve(root.Content[i+1])
		if k.Value != "destinations" {
			errs = append(errs, &FieldError{Reason: fmt.Sprintf("line %d: unknown field %s: the file has only \"destinations:\"", k.Line, quote(k.Value))})
			continue
		}
		list = v
	}
	if list == nil || (list.Kind == yaml.ScalarNode && list.Tag == "!!null") {
		return nil, nil, errs, nil
	}
	if list.Kind != yaml.SequenceNode {
		return nil, nil, nil, &FieldError{Reason: fmt.Sprintf("line %d: destinations: want a list of destinations, got %s", list.Line, kindOf(list, false))}
	}
	if len(list.Content) > MaxDestinations {
		return nil, nil, nil, &FieldError{Reason: fmt.Sprintf("%d destinations, at most %d", len(list.Content), MaxDestinations)}
	}
	bad = map[int]map[string]bool{}
	for i, n := range list.Content {
		s, es := decodeSpec(resolve(n), "#"+strconv.Itoa(i+1))
		specs = append(specs, s)
		if len(es) > 0 {
			bad[i] = map[string]bool{}
			for _, e := range es {
				if fe, ok := errors.AsType[*FieldError](e); ok {
					bad[i][fe.Field] = true
				}
			}
			errs = append(errs, es...)
		}
	}
	return specs, bad, errs, nil
}

// decodeSpec decodes one entry, each field on its own.
func decodeSpec(n *yaml.Node, label string) (Spec, []error) {
	var s Spec
	if n.Kind != yaml.MappingNode {
		return s, []error{&FieldError{Destination: label, Reason: fmt.Sprintf("line %d: want a map of fields (name, url, subjects, secret_env, ...), got %s", n.Line, kindOf(n, false))}}
	}
	// The name first: the other errors are labelled with it.
	for i := 0; i+1 < len(n.Content); i += 2 {
		if v := resolve(n.Content[i+1]); n.Content[i].Value == "name" && v.Kind == yaml.ScalarNode && subscriber.ValidName(v.Value) {
			label = v.Value
		}
	}
	var errs []error
	seen := map[string]bool{}
	sv := reflect.ValueOf(&s).Elem()
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolve(n.Content[i+1])
		idx, ok := specFields[k.Value]
		switch {
		case !ok:
			errs = append(errs, &FieldError{Destination: label, Field: subscriberText(k.Value),
				Reason: fmt.Sprintf("line %d: unknown field; the fields are %s", k.Line, strings.Join(slices.Sorted(maps.Keys(specFields)), ", "))})
			continue
		case seen[k.Value]:
			errs = append(errs, &FieldError{Destination: label, Field: k.Value, Reason: fmt.Sprintf("line %d: is given twice", k.Line)})
			continue
		}
		seen[k.Value] = true
		f := sv.Field(idx)
		if err := decodeField(v, f); err != nil {
			errs = append(errs, &FieldError{Destination: label, Field: k.Value, Reason: fieldReason(err, v, f.Type(), secretFields[k.Value])})
			f.SetZero()
		}
	}
	return s, errs
}

// decodeField decodes n into f, recovering a panic (none is known).
func decodeField(n *yaml.Node, f reflect.Value) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = errors.New("cannot decode")
		}
	}()
	if f.Kind() == reflect.Int && n.ShortTag() != "!!int" {
		// yaml would cut 1.5 to 1.
		return &yaml.TypeError{Errors: []string{"not a whole number"}}
	}
	return n.Decode(f.Addr().Interface())
}

// fieldReason words a field's decoding error: its own unmarshaler's text
// (a Duration's), or what the field wants and what the file holds.
func fieldReason(err error, n *yaml.Node, t reflect.Type, secret bool) string {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return subscriber.SanitizeText(err.Error(), maxDecodeErrorSize) // our own unmarshalers' words
	}
	return fmt.Sprintf("line %d: want %s, got %s", n.Line, want(t), kindOf(n, secret))
}

// want describes what a field of type t holds, in the file's words.
func want(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[StringList]():
		return "a string or a list of strings"
	case reflect.TypeFor[Duration]():
		return `a duration such as "10s" or "3d"`
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "a whole number"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice:
		return "a list of strings"
	case reflect.Map:
		return "a map of names to strings"
	}
	return "a string"
}

// kindOf describes what the file holds at n: a map, a list, or the value
// (quoted, unless secret).
func kindOf(n *yaml.Node, secret bool) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a map"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if secret {
			return "a value"
		}
		return quote(n.Value)
	}
	return "something else"
}

// resolve follows an alias to its anchor.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; i < 8 && n.Kind == yaml.AliasNode && n.Alias != nil; i++ {
		n = n.Alias
	}
	return n
}

// subscriberText bounds and sanitizes text from the file for an error.
func subscriberText(s string) string {
	if len(s) > maxQuoted {
		return quote(s)
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// withoutFields drops the errors about fields (and their elements,
// "subjects[1]", "headers.X") that did not decode: their zero values would
// only repeat the decoding error.
func withoutFields(errs []error, fields map[string]bool) []error {
	if len(fields) == 0 {
		return errs
	}
	return slices.DeleteFunc(errs, func(e error) bool {
		var fe *FieldError
		if !errors.As(e, &fe) {
			return false
		}
		if fields[""] {
			return true // the entry is not a map: no field of it is known
		}
		base, _, _ := strings.Cut(fe.Field, "[")
		base, _, _ = strings.Cut(base, ".")
		return fields[base]
	})
}
