package destination_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hookhub/hookhub/subscribers/destination"
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
