package main

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// composeFile is the part of `docker-compose config` output (normalized:
// anchors merged, variables interpolated) that the checks read.
type composeFile struct {
	Services map[string]composeService `json:"services"`
}

type composeService struct {
	Image           string                       `json:"image"`
	Command         []string                     `json:"command"`
	Environment     map[string]*string           `json:"environment"`
	DependsOn       map[string]map[string]string `json:"depends_on"`
	Healthcheck     *struct{ Test []string }     `json:"healthcheck"`
	Profiles        []string                     `json:"profiles"`
	StopGracePeriod string                       `json:"stop_grace_period"`
	Ports           []any                        `json:"ports"`
	PullPolicy      string                       `json:"pull_policy"`
	Build           any                          `json:"build"`
	Volumes         []any                        `json:"volumes"`
}

// bindMounts returns a service's bind mounts, target -> source, from the
// short ("SRC:DST[:ro]") or long ({type: bind, source, target}) syntax.
func (s composeService) bindMounts() map[string]string {
	out := map[string]string{}
	for _, v := range s.Volumes {
		switch v := v.(type) {
		case string:
			parts := strings.Split(v, ":")
			if len(parts) >= 2 && strings.HasPrefix(parts[0], "/") {
				out[parts[1]] = parts[0]
			}
		case map[string]any:
			src, _ := v["source"].(string)
			dst, _ := v["target"].(string)
			if typ, _ := v["type"].(string); typ == "bind" && src != "" && dst != "" {
				out[dst] = src
			}
		}
	}
	return out
}

func runCompose(args []string) ([]string, error) {
	fs := newFlags("compose")
	envDir := fs.String("env-dir", "", "directory of <binary>.env files")
	_ = fs.Parse(args)
	if fs.NArg() != 1 || *envDir == "" {
		return nil, errors.New("need -env-dir and the output of `docker-compose config`")
	}
	sets, err := loadEnvSets(*envDir)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		return nil, err
	}
	var f composeFile
	if err := yaml.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", fs.Arg(0), err)
	}
	var p problems
	checkCompose(&p, &f, sets)
	checkComposeRoles(&p, &f)
	return p, nil
}

func checkCompose(p *problems, f *composeFile, sets envSets) {
	count := map[string]int{}
	natsNodes := 0
	for _, name := range slices.Sorted(maps.Keys(f.Services)) {
		s := f.Services[name]
		where := "service " + name
		if strings.HasPrefix(s.Image, "nats:") {
			natsNodes++
		}
		// depends_on: healthy needs a health check; the dependency exists and
		// is not in a profile the dependent is not in.
		for dep, cond := range s.DependsOn {
			d, ok := f.Services[dep]
			if !ok {
				p.add(where, "depends on unknown service %s", dep)
				continue
			}
			if cond["condition"] == "service_healthy" && d.Healthcheck == nil {
				p.add(where, "waits for %s to be healthy, but %s has no healthcheck", dep, dep)
			}
			if len(d.Profiles) > 0 && len(s.Profiles) == 0 {
				p.add(where, "depends on %s, which only runs in profile(s) %v", dep, d.Profiles)
			}
		}
		if bin := binaryOf(s.Image); bin != "" {
			count[bin]++
			checkComposeBinary(p, f, where, s, bin, sets)
		}
	}
	if count["hub"] < 3 { // migrate + 2 replicas
		p.add("services", "want the migrate one-shot and two hub replicas, got %d hub services", count["hub"])
	}
	for _, b := range []string{"credits", "email", "downgrade", "destinations"} {
		if count[b] != 1 {
			p.add("services", "want one %s service, got %d", b, count[b])
		}
	}
	if natsNodes != 3 {
		p.add("services", "want 3 NATS nodes, got %d", natsNodes)
	}
}

// checkComposeBinary checks a service that runs the hookhub binary bin.
func checkComposeBinary(p *problems, f *composeFile, where string, s composeService, bin string, sets envSets) {
	// hookhub/* images are built here, never pulled: a registry image of
	// that name would be someone else's.
	if !(s.PullPolicy == "build" && s.Build != nil) && s.PullPolicy != "never" {
		p.add(where, "image %s: set pull_policy build (with build:) or never", s.Image)
	}
	checkEnvNames(p, where, bin, slices.Sorted(maps.Keys(s.Environment)), sets)
	env := func(k string) string {
		if v := s.Environment[k]; v != nil {
			return *v
		}
		return ""
	}
	prefix := binaries[bin]
	grace := 10 * time.Second
	if s.StopGracePeriod != "" {
		if d, err := time.ParseDuration(s.StopGracePeriod); err == nil {
			grace = d
		} else {
			p.add(where, "stop_grace_period %q: %v", s.StopGracePeriod, err)
		}
	}
	shutdown := 25 * time.Second
	if d, err := time.ParseDuration(env(prefix + "SHUTDOWN_TIMEOUT")); err == nil {
		shutdown = d
	}
	if env(prefix+"DATABASE_URL") == "" {
		p.add(where, "%sDATABASE_URL is not set", prefix)
	}
	if bin == "hub" && slices.Contains(s.Command, "migrate") {
		if s.Healthcheck != nil {
			p.add(where, "a one-shot migration needs no healthcheck")
		}
		return
	}
	p.check(where,
		rule{s.Healthcheck == nil, "no healthcheck"},
		rule{grace <= shutdown, fmt.Sprintf("stop_grace_period %s must exceed %sSHUTDOWN_TIMEOUT %s (docker kills at the end of it)", grace, prefix, shutdown)})
	urls := strings.Split(env(prefix+"NATS_URL"), ",")
	for _, u := range urls {
		host := strings.TrimPrefix(u, "nats://")
		if i := strings.LastIndex(host, ":"); i > 0 {
			host = host[:i]
		}
		if _, ok := f.Services[host]; !ok || !strings.HasPrefix(f.Services[host].Image, "nats:") {
			p.add(where, "%sNATS_URL names %q, which is not a NATS service of this file", prefix, u)
		}
	}
	if bin == "destinations" {
		checkComposeDestinations(p, where, s, env)
	}
	hub := bin == "hub"
	p.check(where,
		rule{hub && env("HUB_STREAM_REPLICAS") != "3", fmt.Sprintf("HUB_STREAM_REPLICAS=%q: the compose cluster has 3 nodes", env("HUB_STREAM_REPLICAS"))},
		rule{hub && env("HUB_PADDLE_SECRETS") == "" && env("HUB_CLERK_SECRETS") == "", "no provider secret: `hub serve` refuses to start"},
		rule{hub && s.DependsOn["migrate"]["condition"] != "service_completed_successfully", "must depend on migrate with condition service_completed_successfully"},
		rule{hub && len(urls) != 3, "HUB_NATS_URL should list the 3 NATS nodes"})
	// The hub's health is probed on its private listener when it has
	// one (the webhook listener's connection cap never fills it).
	probed := "HTTP_ADDR"
	if env(prefix+"ADMIN_ADDR") != "" {
		probed = "ADMIN_ADDR"
	}
	if addr := env(prefix + probed); addr != "" && s.Healthcheck != nil {
		port := addr[strings.LastIndex(addr, ":")+1:]
		if _, err := strconv.Atoi(port); err != nil || !strings.Contains(strings.Join(s.Healthcheck.Test, " "), "127.0.0.1:"+port+"/") {
			p.add(where, "healthcheck %v does not probe %s%s's port %s", s.Healthcheck.Test, prefix, probed, port)
		}
	}
}

// checkComposeDestinations checks that DESTINATIONS_FILE is a file mounted
// into the service and that the variables its secret_env fields name are
// set on the service.
func checkComposeDestinations(p *problems, where string, s composeService, env func(string) string) {
	file := env("DESTINATIONS_FILE")
	if !strings.HasPrefix(file, "/") {
		p.add(where, "DESTINATIONS_FILE=%q: set it to the absolute path where the destinations file is mounted", file)
		return
	}
	src, ok := s.bindMounts()[file]
	if !ok {
		p.add(where, "DESTINATIONS_FILE=%s is not a bind-mounted file", file)
		return
	}
	data, err := os.ReadFile(src)
	if err != nil {
		p.add(where, "DESTINATIONS_FILE: %v", err)
		return
	}
	envs, err := secretEnvs(data)
	if err != nil {
		p.add(where, "%s: %v", src, err)
		return
	}
	for _, d := range slices.Sorted(maps.Keys(envs)) {
		for _, n := range envs[d] {
			if env(n) == "" {
				p.add(where, "destination %s: its secret_env %s is not set on the service", d, n)
			}
		}
	}
}
