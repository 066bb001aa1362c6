// Command check validates hookhub's deployment files offline, beyond what
// their own tools check: deploy/validate.sh runs it on the output of
// `kustomize build`, `docker-compose config`, the Grafana dashboard and the
// Prometheus rules.
//
//	check k8s [-production] -env-dir DIR -nats-values FILE MANIFEST...
//	check compose -env-dir DIR FILE
//	check promql -known FILE [-rules-out FILE] DASHBOARD.json RULES.yml ...
//	check yaml FILE...   (parses, rejecting duplicate keys)
//	check dest-env FILE  (prints the variables a destinations file's secret_env names)
//
// -env-dir holds hub.env, credits.env, email.env, downgrade.env and
// destinations.env: the variable names each binary reads, one per line
// (validate.sh takes them from the binaries' --help), so a misspelt variable
// in a manifest is an error rather than a silently ignored setting.
//
// This is a separate module so that its Kubernetes dependencies stay out of
// hookhub's go.mod; `go test ./...` at the repository root does not see it.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/yaml"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var problems []string
	var err error
	switch os.Args[1] {
	case "k8s":
		problems, err = runK8s(os.Args[2:])
	case "compose":
		problems, err = runCompose(os.Args[2:])
	case "promql":
		problems, err = runPromQL(os.Args[2:])
	case "yaml":
		problems, err = runYAML(os.Args[2:])
	case "dest-env":
		_, err = runDestEnv(os.Args[2:])
		if err == nil {
			return // the names are the output
		}
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "check %s: %v\n", os.Args[1], err)
		os.Exit(2)
	}
	if len(problems) > 0 {
		fmt.Fprintf(os.Stderr, "check %s: %d problem(s):\n", os.Args[1], len(problems))
		for _, p := range problems {
			fmt.Fprintf(os.Stderr, "  - %s\n", p)
		}
		os.Exit(1)
	}
	fmt.Printf("check %s: ok\n", os.Args[1])
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: check k8s|compose|promql|yaml|dest-env [flags] FILE...")
	os.Exit(2)
}

// problems collects findings with a prefix naming the object.
type problems []string

func (p *problems) add(where, format string, args ...any) {
	*p = append(*p, where+": "+fmt.Sprintf(format, args...))
}

// rule is one line of a table of checks: msg is reported when bad holds.
type rule struct {
	bad bool
	msg string
}

// check reports, in order, the message of every rule that does not hold.
func (p *problems) check(where string, rules ...rule) {
	for _, r := range rules {
		if r.bad {
			*p = append(*p, where+": "+r.msg)
		}
	}
}

// envSets are the variable names each binary reads, by binary name.
type envSets map[string]map[string]bool

// Binaries and their environment prefixes.
var binaries = map[string]string{
	"hub":          "HUB_",
	"credits":      "CREDITS_",
	"email":        "EMAIL_",
	"downgrade":    "DOWNGRADE_",
	"destinations": "DESTINATIONS_",
}

func loadEnvSets(dir string) (envSets, error) {
	sets := envSets{}
	for bin, prefix := range binaries {
		b, err := os.ReadFile(dir + "/" + bin + ".env")
		if err != nil {
			return nil, err
		}
		set := map[string]bool{}
		for _, line := range strings.Fields(string(b)) {
			if !strings.HasPrefix(line, prefix) {
				return nil, fmt.Errorf("%s.env: %q does not start with %s", bin, line, prefix)
			}
			set[line] = true
		}
		if len(set) < 5 {
			return nil, fmt.Errorf("%s.env: only %d variables: was --help parsed correctly?", bin, len(set))
		}
		sets[bin] = set
	}
	return sets, nil
}

// binaryOf returns which hookhub binary an image runs ("" for others):
// hookhub/hub:tag, ghcr.io/hookhub/email:1.2 ...
func binaryOf(image string) string {
	name := image
	if i := strings.LastIndex(name, "@"); i >= 0 {
		name = name[:i]
	}
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name = name[:i]
	}
	if !strings.Contains(name, "hookhub/") {
		return ""
	}
	base := name[strings.LastIndex(name, "/")+1:]
	if _, ok := binaries[base]; ok {
		return base
	}
	return ""
}

// checkEnvNames reports variables with the binary's prefix that the binary
// does not read, and variables of another binary's prefix.
func checkEnvNames(p *problems, where, bin string, names []string, sets envSets) {
	for _, n := range names {
		switch {
		case sets[bin][n]:
		case strings.HasPrefix(n, binaries[bin]):
			p.add(where, "%s is not a variable %s reads (see `%s --help`)", n, bin, bin)
		default:
			for other, prefix := range binaries {
				if strings.HasPrefix(n, prefix) {
					p.add(where, "%s is %s's variable, set on %s", n, other, bin)
				}
			}
		}
	}
}

func runYAML(files []string) ([]string, error) {
	var p problems
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var v any
		if err := yaml.UnmarshalStrict(b, &v); err != nil {
			p.add(f, "YAML: %v", err)
		} else if v == nil {
			p.add(f, "empty")
		}
	}
	return p, nil
}

func newFlags(name string) *flag.FlagSet {
	return flag.NewFlagSet(name, flag.ExitOnError)
}
