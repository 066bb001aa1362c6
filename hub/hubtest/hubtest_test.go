package hubtest

import "testing"

func TestWithDatabase(t *testing.T) {
	cases := []struct{ in, want string }{
		{"postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "postgres://postgres@127.0.0.1:5432/x?sslmode=disable"},
		{"postgres://u:p@h/db", "postgres://u:p@h/x"},
		{"postgres://h:5432", "postgres://h:5432/x"},
	}
	for _, c := range cases {
		if got := WithDatabase(c.in, "x"); got != c.want {
			t.Errorf("WithDatabase(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
