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

func TestRedact(t *testing.T) {
	cases := []struct{ in, want string }{
		{"postgres://u:secret@h:5432/db?sslmode=disable", "postgres://u:***@h:5432/db?sslmode=disable"},
		{"postgres://u:p@ss@h/db", "postgres://u:***@h/db"},
		{"postgres://u@h/db", "postgres://u@h/db"},
		{"postgres://h/db", "postgres://h/db"},
		{"u:secret@h/db", "…@h/db"},
		{"host=h dbname=d", "host=h dbname=d"},
	}
	for _, c := range cases {
		if got := Redact(c.in); got != c.want {
			t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
