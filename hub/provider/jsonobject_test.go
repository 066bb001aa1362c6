package provider

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/hookhub/hookhub/internal/jsontext"
)

// validJSON is topLevelMembers' validator on its own: data is one JSON
// value and nothing else but whitespace.
func validJSON(data []byte) bool {
	end, ok := jsontext.SkipValue(data, jsontext.SkipSpace(data, 0), 0)
	return ok && jsontext.SkipSpace(data, end) == len(data)
}

func TestTopLevelMembers(t *testing.T) {
	names := []string{"event_id", "event_type"}
	deep := func(n int) string { return `{"a":` + strings.Repeat("[", n-1) + strings.Repeat("]", n-1) + `}` }
	for _, tc := range []struct {
		name string
		body string
		ok   bool
		raw  []string // per name; "" = absent
	}{
		{"both strings", `{"event_id":"evt_1","event_type":"a.b"}`, true, []string{`"evt_1"`, `"a.b"`}},
		{"whitespace everywhere", " \t\r\n{ \"event_type\" :\n\"a\" , \"event_id\"\t:\"e\" }\n", true, []string{`"e"`, `"a"`}},
		{"empty object", `{}`, true, []string{"", ""}},
		{"other members skipped", `{"data":{"x":[1,-2.5e+3,true,false,null,{"y":"\u00e9\n"}]},"event_id":null}`, true, []string{`null`, ""}},
		{"non-string value kept raw", `{"event_id":12,"event_type":{"a":[]}}`, true, []string{`12`, `{"a":[]}`}},
		{"nesting at the limit", deep(jsontext.MaxDepth), true, []string{"", ""}},
		{"nesting past the limit", deep(jsontext.MaxDepth + 1), false, nil},
		{"wanted name twice", `{"event_id":"a","event_id":"b"}`, false, nil},
		{"wanted name in another case", `{"Event_ID":"a"}`, false, nil},
		{"escaped member name", `{"event\u005fid":"a"}`, false, nil},
		{"non-ASCII member name", `{"évent":"a"}`, false, nil},
		{"array", `[1,2]`, false, nil},
		{"string", `"evt"`, false, nil},
		{"null", `null`, false, nil},
		{"empty", ``, false, nil},
		{"trailing data", `{} {}`, false, nil},
		{"trailing comma", `{"a":1,}`, false, nil},
		{"trailing comma in array", `{"a":[1,]}`, false, nil},
		{"missing colon", `{"a" 1}`, false, nil},
		{"truncated", `{"event_id":"evt_1"`, false, nil},
		{"leading zero", `{"a":01}`, false, nil},
		{"bare minus", `{"a":-}`, false, nil},
		{"fraction without digits", `{"a":1.}`, false, nil},
		{"exponent without digits", `{"a":1e+}`, false, nil},
		{"control character in string", "{\"a\":\"x\ny\"}", false, nil},
		{"bad escape", `{"a":"\x"}`, false, nil},
		{"short unicode escape", `{"a":"\u12"}`, false, nil},
		{"bad literal", `{"a":nul}`, false, nil},
		{"mismatched brackets", `{"a":[}`, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := make([][]byte, len(names))
			ok := topLevelMembers([]byte(tc.body), names, raw)
			if ok != tc.ok {
				t.Fatalf("topLevelMembers = %v, want %v", ok, tc.ok)
			}
			if valid := json.Valid([]byte(tc.body)); tc.ok && !valid {
				t.Fatalf("test case is not JSON to encoding/json")
			}
			if !ok {
				return
			}
			for i, want := range tc.raw {
				if string(raw[i]) != want {
					t.Errorf("%s = %q, want %q", names[i], raw[i], want)
				}
			}
		})
	}
}

func TestPlainString(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		ok   bool
		want string
	}{
		{`"evt_1"`, true, "evt_1"},
		{`"é"`, true, "é"},
		{`null`, true, "keep"},
		{`"a\nb"`, false, "keep"},
		{"\"\xff\"", false, "keep"},
		{`12`, false, "keep"},
	} {
		got := "keep"
		if ok := plainString(&got, []byte(tc.raw)); ok != tc.ok || got != tc.want {
			t.Errorf("plainString(%q) = %q, %v; want %q, %v", tc.raw, got, ok, tc.want, tc.ok)
		}
	}
}

// fastBodies are the body types with a decodeFast, each with the fast
// path and encoding/json side by side.
var fastBodies = []struct {
	name string
	fast func([]byte) (any, bool)
	slow func([]byte) (any, error)
}{
	{"paddle", func(b []byte) (any, bool) { var v paddleBody; ok := v.decodeFast(b); return v, ok },
		func(b []byte) (any, error) { var v paddleBody; err := json.Unmarshal(b, &v); return v, err }},
	{"svix", func(b []byte) (any, bool) { var v svixBody; ok := v.decodeFast(b); return v, ok },
		func(b []byte) (any, error) { var v svixBody; err := json.Unmarshal(b, &v); return v, err }},
	{"stripe", func(b []byte) (any, bool) { var v stripeBody; ok := v.decodeFast(b); return v, ok },
		func(b []byte) (any, error) { var v stripeBody; err := json.Unmarshal(b, &v); return v, err }},
}

// FuzzTopLevelMembers checks the fast path against encoding/json: its
// validator agrees with json.Valid on every input, and whenever a
// decodeFast answers, it decoded what json.Unmarshal decodes.
func FuzzTopLevelMembers(f *testing.F) {
	for _, s := range []string{
		`{"event_id":"evt_1","event_type":"a.b","occurred_at":"2024-04-12T10:18:49.621022Z"}`,
		`{"type":"user.created","timestamp":1654012591835,"data":{"id":"user_1"}}`,
		`{"id":"evt_1","type":"customer.created","created":1700000000,"data":{"object":{}}}`,
		`{"event_id":"a","event_id":null}`, `{"EVENT_ID":"a"}`, `{"event_id":"\u0041"}`,
		`[1,{"a":[true,false,null,-0.5e-7]}]`, `"\ud800"`, "{\"a\":\"\xff\"}", ` {} `, `{"a":01}`,
		`{"action":"opened","number":1}`, `{"action":"re\u006fpened"}`, `{"action":7}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := validJSON(data), json.Valid(data); got != want {
			t.Fatalf("validJSON(%q) = %v, json.Valid = %v", data, got, want)
		}
		// GitHub's action, against the encoding/json reading it replaced.
		var want struct {
			Action json.RawMessage `json:"action"`
		}
		wantErr := json.Unmarshal(data, &want)
		var wantAction string
		if wantErr == nil && len(want.Action) > 0 && want.Action[0] == '"' {
			_ = json.Unmarshal(want.Action, &wantAction)
		}
		if action, err := githubAction(data); (err != nil) != (wantErr != nil) || action != wantAction {
			t.Fatalf("githubAction(%q) = %q, %v; encoding/json: %q, %v", data, action, err, wantAction, wantErr)
		}
		for _, b := range fastBodies {
			fast, ok := b.fast(data)
			if !ok {
				continue
			}
			slow, err := b.slow(data)
			if err != nil {
				t.Fatalf("%s: fast path read %q, encoding/json rejects it: %v", b.name, data, err)
			}
			if !reflect.DeepEqual(fast, slow) {
				t.Fatalf("%s: fast path read %q as %+v, encoding/json as %+v", b.name, data, fast, slow)
			}
		}
	})
}

func BenchmarkPaddleBody(b *testing.B) {
	body, err := samples.Body((&Paddle{}).Name(), "evt_01bench", "subscription.created", nil, fuzzNow)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("fast", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			var v paddleBody
			if !v.decodeFast(body) {
				b.Fatal("fast path declined a sample body")
			}
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			var v paddleBody
			if err := json.Unmarshal(body, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
