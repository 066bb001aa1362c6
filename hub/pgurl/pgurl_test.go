package pgurl

import "testing"

func TestWithDatabase(t *testing.T) {
	cases := []struct{ in, want string }{
		{"postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "postgres://postgres@127.0.0.1:5432/x?sslmode=disable"},
		{"postgres://u:p%40ss@h/db", "postgres://u:p%40ss@h/x"},
		{"postgresql://h:5432", "postgresql://h:5432/x"},
	}
	for _, c := range cases {
		got, err := WithDatabase(c.in, "x")
		if err != nil || got != c.want {
			t.Errorf("WithDatabase(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"host=h dbname=d", "mysql://h/d", "::"} {
		if _, err := WithDatabase(bad, "x"); err == nil {
			t.Errorf("WithDatabase(%q) accepted", bad)
		}
	}
}
