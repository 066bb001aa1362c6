package subtest

// ServiceEnv returns the variables that point a service (prefix, e.g.
// "CREDITS") at env, with an ephemeral HTTP port and text logs.
func (e *Env) ServiceEnv(prefix string) []string {
	return []string{
		prefix + "_DATABASE_URL=" + e.DBURL,
		prefix + "_NATS_URL=" + e.NATS.URL(),
		prefix + "_STREAM=" + Stream,
		prefix + "_HTTP_ADDR=127.0.0.1:0",
		prefix + "_LOG_FORMAT=text",
		prefix + "_LOG_LEVEL=info",
	}
}
