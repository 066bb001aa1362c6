package destination_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookhub/hookhub/subscribers/destination"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// FuzzParse: Parse never panics, and an error never shows the value of
// an environment variable the file names (unless the file itself holds
// that text).
func FuzzParse(f *testing.F) {
	f.Add([]byte(minimal))
	f.Add([]byte(entry("secret_env", "[BILLING_SECRET, OLD_SECRET, BAD_SECRET]")))
	f.Add([]byte(entry("headers", `{X-A: "a\nb", Content-Type: x}`)))
	f.Add([]byte(entry("timeout", "3d")))
	f.Add([]byte(`{"destinations":[{"name":"a","url":"https://a/","subjects":["a.>"],"secret_env":"X"}]}`))
	f.Add([]byte("a: &a [*a, *a]\n"))
	f.Add([]byte("destinations:\n  - &x {name: a}\n  - *x\n"))
	f.Add([]byte(entry("ordered", "true")))
	f.Add([]byte(entry("start", "2026-12-01T00:00:00Z")))
	f.Add([]byte(entry("allow_link_local", "[true]")))
	f.Add([]byte(entry("subjects", "{a: [b]}") + "    concurrency: 1.5\n    bogus: x\n  - 7\n"))
	f.Add([]byte(entry("url", "http://[::ffff:169.254.169.254]/")))
	secrets := map[string]string{
		"BILLING_SECRET": testSecret,
		"OLD_SECRET":     testOldSecret,
		"BAD_SECRET":     "hunter2-not-a-whsec-zz9",
	}
	getenv := func(name string) (string, bool) {
		if v, ok := secrets[name]; ok {
			return v, true
		}
		// Any other name holds a secret-like value too.
		return "s3cr3t-" + name + "-value", len(name) > 3
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ds, err := destination.Parse(data, getenv)
		if err != nil {
			if ds != nil {
				t.Fatal("destinations returned with an error")
			}
			msg := err.Error()
			for _, v := range secrets {
				if strings.Contains(msg, v) && !strings.Contains(string(data), v) {
					t.Fatalf("error shows a secret: %s", msg)
				}
			}
			if strings.Contains(msg, "s3cr3t-") && !strings.Contains(string(data), "s3cr3t-") {
				t.Fatalf("error shows an env value: %s", msg)
			}
			return
		}
		for _, d := range ds {
			if d.Concurrency < 1 || d.Timeout.D() < destination.MinTimeout || d.ConnectTimeout.D() > d.Timeout.D() ||
				d.RetryFor.D() < time.Minute || len(d.Secrets) == 0 || (d.Ordered && d.Concurrency != 1) {
				t.Fatalf("invalid destination accepted: %+v", d.Spec)
			}
			_ = d.Fingerprint()
		}
	})
}

// FuzzBody: an event body is untrusted. Body never panics; an envelope is
// valid JSON matching its schema, and a refusal is a permanent decode
// error; a raw payload is the body itself.
func FuzzBody(f *testing.F) {
	for _, s := range []string{`{"a":1}`, "a=b&a=c", "x", "", "\xff", "a=%C3%A9", `"s"`, " null ", "a=b&&c"} {
		f.Add([]byte(s))
	}
	sch := loadSchema(f, "jsonschema/destination-envelope.json")
	at := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		ev := event("p", "t.x", data, at, time.Time{})
		env, err := destination.Body(destination.PayloadEnvelope, ev)
		if err != nil {
			if !errors.Is(err, subscriber.ErrDecode) || !subscriber.IsPermanent(err) {
				t.Fatalf("err = %v", err)
			}
		} else if err := validate(sch, env); err != nil {
			t.Fatalf("%v: %q", err, env)
		}
		raw, err := destination.Body(destination.PayloadRaw, ev)
		if err != nil || !bytes.Equal(raw, data) {
			t.Fatalf("raw = %q, %v", raw, err)
		}
		_ = destination.ContentType(destination.PayloadRaw, ev)
	})
}
