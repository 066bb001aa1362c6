package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// natsExporterMetrics are the series of prometheus-nats-exporter's JetStream
// collector (collector/jsz.go) with -prefix=nats, as the NATS Helm chart runs it.
var natsExporterMetrics = []string{
	"nats_server_jetstream_disabled", "nats_server_total_streams", "nats_server_total_consumers",
	"nats_server_total_messages", "nats_server_total_message_bytes", "nats_server_max_memory", "nats_server_max_storage",
	"nats_stream_total_messages", "nats_stream_total_bytes", "nats_stream_first_seq", "nats_stream_last_seq", "nats_stream_consumer_count",
	"nats_consumer_delivered_consumer_seq", "nats_consumer_delivered_stream_seq", "nats_consumer_num_ack_pending",
	"nats_consumer_num_redelivered", "nats_consumer_num_waiting", "nats_consumer_num_pending",
	"nats_consumer_ack_floor_stream_seq", "nats_consumer_ack_floor_consumer_seq",
}

var metricTokenRE = regexp.MustCompile(`\b(hub|hookhub|nats)_[a-z0-9_]+\b`)

// A regex name matcher, {__name__=~"hookhub_subscriber_(a|b)_total"}: each
// alternative is checked.
var nameMatcherRE = regexp.MustCompile(`__name__=~"([a-z0-9_]+)\(([a-z0-9_|]+)\)([a-z0-9_]*)"`)

func runPromQL(args []string) ([]string, error) {
	fs := newFlags("promql")
	knownFile := fs.String("known", "", "file of the metric names hookhub exports, one per line")
	rulesOut := fs.String("rules-out", "", "write the dashboards' queries as a Prometheus rules file (for promtool check rules)")
	_ = fs.Parse(args)
	if fs.NArg() == 0 || *knownFile == "" {
		return nil, errors.New("need -known and dashboard/rules files")
	}
	b, err := os.ReadFile(*knownFile)
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for _, n := range append(strings.Fields(string(b)), natsExporterMetrics...) {
		known[n] = true
		for _, sfx := range []string{"_bucket", "_sum", "_count"} {
			known[n+sfx] = true
		}
	}
	var p problems
	var exprs []string
	for _, file := range fs.Args() {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		if strings.HasSuffix(file, ".json") {
			exprs = append(exprs, checkDashboard(&p, file, data)...)
		} else {
			checkRules(&p, file, data, known)
		}
	}
	for _, e := range exprs {
		checkMetricNames(&p, "dashboard query "+e, e, known)
	}
	if *rulesOut != "" {
		if err := writeRules(*rulesOut, exprs); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func checkMetricNames(p *problems, where, expr string, known map[string]bool) {
	for _, m := range nameMatcherRE.FindAllStringSubmatch(expr, -1) {
		for _, alt := range strings.Split(m[2], "|") {
			if n := m[1] + alt + m[3]; !known[n] {
				p.add(where, "metric %s is not exported by hookhub or the NATS exporter", n)
			}
		}
	}
	expr = nameMatcherRE.ReplaceAllString(expr, "")
	for _, tok := range metricTokenRE.FindAllString(expr, -1) {
		if !known[tok] {
			p.add(where, "metric %s is not exported by hookhub or the NATS exporter", tok)
		}
	}
}

type dashboard struct {
	UID        string `json:"uid"`
	Title      string `json:"title"`
	Templating struct {
		List []struct {
			Name string `json:"name"`
		} `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	GridPos struct{ H, W, X, Y int } `json:"gridPos"`
	Targets []struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	} `json:"targets"`
}

var templateVarRE = regexp.MustCompile(`\$(\w+)|\$\{(\w+)\}`)

// checkDashboard checks a Grafana dashboard's structure and returns its
// queries with the template variables replaced by values Prometheus accepts.
func checkDashboard(p *problems, file string, data []byte) []string {
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		p.add(file, "JSON: %v", err)
		return nil
	}
	if d.UID == "" || d.Title == "" {
		p.add(file, "needs uid and title")
	}
	vars := map[string]bool{"__rate_interval": true, "__interval": true, "__range": true}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
	}
	ids := map[int]bool{}
	var exprs []string
	for _, pn := range d.Panels {
		where := fmt.Sprintf("%s panel %d %q", file, pn.ID, pn.Title)
		if ids[pn.ID] || pn.ID == 0 {
			p.add(where, "panel ids must be unique and non-zero")
		}
		ids[pn.ID] = true
		if pn.GridPos.W <= 0 || pn.GridPos.X+pn.GridPos.W > 24 || pn.GridPos.H <= 0 {
			p.add(where, "gridPos %+v outside the 24-column grid", pn.GridPos)
		}
		if pn.Type == "row" {
			continue
		}
		if pn.Datasource == nil || pn.Datasource.UID != "${datasource}" {
			p.add(where, "datasource should be the ${datasource} variable, so the dashboard imports anywhere")
		}
		if len(pn.Targets) == 0 {
			p.add(where, "no query")
		}
		refs := map[string]bool{}
		for _, t := range pn.Targets {
			if refs[t.RefID] {
				p.add(where, "duplicate refId %s", t.RefID)
			}
			refs[t.RefID] = true
			for _, m := range templateVarRE.FindAllStringSubmatch(t.Expr, -1) {
				if n := m[1] + m[2]; !vars[n] {
					p.add(where, "query uses $%s, which is not a template variable", n)
				}
			}
			e := strings.NewReplacer("$__rate_interval", "1m", "$__interval", "1m", "$__range", "1h",
				"$provider", ".*", "$destination", ".*", "$stream", "WEBHOOKS").Replace(t.Expr)
			exprs = append(exprs, e)
		}
	}
	// Panels must not overlap.
	for i, a := range d.Panels {
		for _, b := range d.Panels[i+1:] {
			ga, gb := a.GridPos, b.GridPos
			if ga.X < gb.X+gb.W && gb.X < ga.X+ga.W && ga.Y < gb.Y+gb.H && gb.Y < ga.Y+ga.H {
				p.add(file, "panels %q and %q overlap", a.Title, b.Title)
			}
		}
	}
	return exprs
}

type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert       string            `json:"alert"`
			Record      string            `json:"record"`
			Expr        string            `json:"expr"`
			For         string            `json:"for"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

// checkRules checks what promtool does not: known metric names, a severity
// and a summary on every alert.
func checkRules(p *problems, file string, data []byte, known map[string]bool) {
	var rf ruleFile
	if err := yaml.Unmarshal(data, &rf); err != nil {
		p.add(file, "YAML: %v", err)
		return
	}
	if len(rf.Groups) == 0 {
		p.add(file, "no rule groups")
	}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			where := fmt.Sprintf("%s %s", file, r.Alert+r.Record)
			checkMetricNames(p, where, r.Expr, known)
			if r.Alert == "" {
				continue
			}
			if !slices.Contains([]string{"critical", "warning"}, r.Labels["severity"]) {
				p.add(where, "severity label must be critical or warning, got %q", r.Labels["severity"])
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				p.add(where, "needs summary and description annotations")
			}
		}
	}
}

func writeRules(path string, exprs []string) error {
	type rule struct {
		Record string `json:"record"`
		Expr   string `json:"expr"`
	}
	var rules []rule
	for i, e := range exprs {
		rules = append(rules, rule{Record: fmt.Sprintf("dashboard:query_%d", i), Expr: e})
	}
	out, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}
