package main

import (
	"fmt"
	"maps"
	"net"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// envValue is what a container's variable is set to: a literal or a
// reference the checker cannot resolve (secrets).
type envValue struct {
	literal string
	known   bool
}

// environment resolves a container's variables: envFrom ConfigMaps and
// Secrets, then env (which wins).
func (c *k8sChecker) environment(where string, ctr *corev1.Container) map[string]envValue {
	env := map[string]envValue{}
	for _, from := range ctr.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			cm, ok := c.m.configMaps[from.ConfigMapRef.Name]
			if !ok {
				c.p.add(where, "envFrom ConfigMap %q is not in the manifests", from.ConfigMapRef.Name)
				continue
			}
			for k, v := range cm.Data {
				env[from.Prefix+k] = envValue{literal: v, known: true}
			}
		case from.SecretRef != nil:
			keys, ok := c.m.secrets[from.SecretRef.Name]
			if !ok {
				c.p.add(where, "envFrom Secret %q is neither in the manifests nor a template given to the check", from.SecretRef.Name)
				continue
			}
			for _, k := range keys {
				env[from.Prefix+k] = envValue{}
			}
		}
	}
	for _, e := range ctr.Env {
		for _, msg := range validation.IsEnvVarName(e.Name) {
			c.p.add(where, "env %q: %s", e.Name, msg)
		}
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = envValue{literal: e.Value, known: true}
		case e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			cm, ok := c.m.configMaps[ref.Name]
			if !ok {
				c.p.add(where, "env %s: ConfigMap %q is not in the manifests", e.Name, ref.Name)
				continue
			}
			v, ok := cm.Data[ref.Key]
			if !ok {
				c.p.add(where, "env %s: ConfigMap %q has no key %q", e.Name, ref.Name, ref.Key)
			}
			env[e.Name] = envValue{literal: v, known: ok}
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			keys, ok := c.m.secrets[ref.Name]
			if !ok {
				c.p.add(where, "env %s: Secret %q is neither in the manifests, a template given to the check, nor a CloudNativePG Cluster's app secret", e.Name, ref.Name)
			} else if !slices.Contains(keys, ref.Key) {
				c.p.add(where, "env %s: Secret %q has no key %q (keys: %s)", e.Name, ref.Name, ref.Key, strings.Join(keys, ", "))
			}
			env[e.Name] = envValue{}
		default:
			env[e.Name] = envValue{}
		}
	}
	return env
}

// binCheck is one container of a hookhub binary, for the rules specific to
// what that binary does.
type binCheck struct {
	*k8sChecker
	where, bin, prefix string
	spec               *corev1.PodSpec
	ctr                *corev1.Container
	env                map[string]envValue
	ports              map[string]int32
	args               []string
	grace              int64
}

func (b *binCheck) require(names ...string) {
	for _, n := range names {
		if _, ok := b.env[n]; !ok {
			b.p.add(b.where, "%s is not set", n)
		}
	}
}

func (b *binCheck) duration(name string, def time.Duration) time.Duration {
	v, ok := b.env[name]
	if !ok || !v.known {
		return def
	}
	d, err := time.ParseDuration(v.literal)
	if err != nil {
		b.p.add(b.where, "%s=%q is not a duration", name, v.literal)
		return def
	}
	return d
}

// listenPort checks that the container port named portName is the port of
// the variable's listen address (def when unset).
func (b *binCheck) listenPort(variable, portName string, def int32) {
	addr := ""
	if v, ok := b.env[b.prefix+variable]; ok && v.known {
		addr = v.literal
	}
	want := def
	if addr != "" {
		_, port, err := net.SplitHostPort(addr)
		n, err2 := strconv.Atoi(port)
		if err != nil || err2 != nil {
			b.p.add(b.where, "%s%s=%q is not host:port", b.prefix, variable, addr)
			return
		}
		want = int32(n)
	}
	if got, ok := b.ports[portName]; !ok || got != want {
		b.p.add(b.where, "container port %q is %d, but the process listens on %d (%s%s)", portName, got, want, b.prefix, variable)
	}
}

// binaryRules are the rules specific to what each hookhub binary does.
func (c *k8sChecker) binaryRules(where string, spec *corev1.PodSpec, ctr *corev1.Container, bin string, env map[string]envValue, ports map[string]int32, isJob bool) {
	b := &binCheck{k8sChecker: c, where: where, bin: bin, prefix: binaries[bin], spec: spec, ctr: ctr, env: env, ports: ports,
		args: append(slices.Clone(ctr.Command), ctr.Args...), grace: 30}
	if spec.TerminationGracePeriodSeconds != nil {
		b.grace = *spec.TerminationGracePeriodSeconds
	}
	switch {
	case bin == "hub" && slices.Contains(b.args, "migrate"):
		if !isJob {
			c.p.add(where, "`hub migrate` belongs in a Job")
		}
		if !slices.Contains(b.args, "up") {
			c.p.add(where, "the migration Job should run `hub migrate up`, got %v", b.args)
		}
		b.require("HUB_DATABASE_URL")
		return
	case isJob:
		c.p.add(where, "a Job running %s %v: expected only `hub migrate up`", bin, b.args)
		return
	}
	b.require(b.prefix+"DATABASE_URL", b.prefix+"NATS_URL")
	if c.production {
		c.natsURL(where, b.prefix+"NATS_URL", env)
	}
	if bin == "hub" {
		b.hubRules()
	} else {
		b.subscriberRules()
	}
}

// hubRules are the rules of `hub serve`.
func (b *binCheck) hubRules() {
	where, env, ctr := b.where, b.env, b.ctr
	_, paddle := env["HUB_PADDLE_SECRETS"]
	_, clerk := env["HUB_CLERK_SECRETS"]
	b.p.check(where,
		rule{len(b.args) == 0 || b.args[0] != "serve", fmt.Sprintf("the hub Deployment should run `hub serve`, got %v", b.args)},
		rule{!paddle && !clerk, "no provider secret (HUB_PADDLE_SECRETS or HUB_CLERK_SECRETS): `hub serve` refuses to start"})
	b.listenPort("HTTP_ADDR", "http", 8080)
	probePath(b.p, where, "readiness", ctr.ReadinessProbe, "/readyz")
	probePath(b.p, where, "liveness", ctr.LivenessProbe, "/healthz")
	// /admin/, /metrics and pprof stay off the webhook port, and the
	// probes use the admin port, which HUB_MAX_CONNS never fills.
	if v, ok := env["HUB_ADMIN_ADDR"]; !ok || (v.known && v.literal == "") {
		b.p.add(where, "HUB_ADMIN_ADDR is not set: /admin/ and /metrics would share the webhook port")
	} else {
		b.listenPort("ADMIN_ADDR", "admin", 0)
		for _, pr := range []*corev1.Probe{ctr.ReadinessProbe, ctr.LivenessProbe} {
			if pr != nil && pr.HTTPGet != nil && pr.HTTPGet.Port.StrVal != "admin" {
				b.p.add(where, "probe of %s uses port %q: probe the admin port", pr.HTTPGet.Path, pr.HTTPGet.Port.String())
			}
		}
	}
	var pause int64
	if ctr.Lifecycle == nil || ctr.Lifecycle.PreStop == nil {
		b.p.add(where, "needs a preStop pause, so endpoints are updated before SIGTERM closes the listener")
	} else if s := ctr.Lifecycle.PreStop.Sleep; s != nil {
		pause = s.Seconds
	} else if e := ctr.Lifecycle.PreStop.Exec; e != nil && len(e.Command) == 2 && e.Command[0] == "sleep" {
		pause, _ = strconv.ParseInt(e.Command[1], 10, 64)
	}
	b.p.check(where, rule{pause < 2 || pause > 15, fmt.Sprintf("preStop pause %ds: want 2-15s", pause)})
	shutdown, replicas := b.duration("HUB_SHUTDOWN_TIMEOUT", 25*time.Second), env["HUB_STREAM_REPLICAS"].literal
	b.p.check(where,
		rule{b.grace <= pause+int64(shutdown/time.Second), fmt.Sprintf("terminationGracePeriodSeconds %d must exceed preStop %ds + HUB_SHUTDOWN_TIMEOUT %s", b.grace, pause, shutdown)},
		rule{b.production && replicas != "3", fmt.Sprintf("HUB_STREAM_REPLICAS=%q: production runs R3 streams", replicas)})
}

// subscriberRules are the rules of the subscribers (credits, email,
// downgrade, destinations).
func (b *binCheck) subscriberRules() {
	where, prefix := b.where, b.prefix
	b.listenPort("HTTP_ADDR", "http", map[string]int32{"credits": 9101, "email": 9102, "downgrade": 9103, "destinations": 8085}[b.bin])
	probePath(b.p, where, "readiness", b.ctr.ReadinessProbe, "/healthz")
	b.p.check(where, rule{b.ctr.LivenessProbe == nil, "no liveness probe"})
	shutdown := b.duration(prefix+"SHUTDOWN_TIMEOUT", 25*time.Second)
	b.p.check(where, rule{b.grace <= int64(shutdown/time.Second)+5, fmt.Sprintf("terminationGracePeriodSeconds %d must exceed %sSHUTDOWN_TIMEOUT %s + 5s of HTTP shutdown", b.grace, prefix, shutdown)})
	if b.bin == "destinations" {
		b.destinationsFile(where, b.spec, b.ctr, b.env)
	}
	if v := b.env["EMAIL_SMTP_ADDR"]; b.bin == "email" && b.production && v.known && (v.literal == "log" || v.literal == "") {
		b.p.add(where, "EMAIL_SMTP_ADDR=%q: production sends email", v.literal)
	}
}

var natsURLRE = regexp.MustCompile(`^(nats|tls)://[A-Za-z0-9.-]+:[0-9]+$`)

// natsURL checks that a production NATS URL lists every node of the cluster.
func (c *k8sChecker) natsURL(where, name string, env map[string]envValue) {
	v := env[name]
	if !v.known {
		return
	}
	urls := strings.Split(v.literal, ",")
	hosts := map[string]bool{}
	for _, u := range urls {
		if !natsURLRE.MatchString(u) {
			c.p.add(where, "%s: %q is not nats://host:port", name, u)
		}
		hosts[u] = true
	}
	if c.natsReplicas > 0 && len(hosts) != c.natsReplicas {
		c.p.add(where, "%s lists %d distinct server(s); the NATS cluster (deploy/nats/values.yaml) has %d", name, len(hosts), c.natsReplicas)
	}
}

func probePath(p *problems, where, kind string, probe *corev1.Probe, path string) {
	if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != path {
		p.add(where, "%s probe must be an HTTP GET of %s", kind, path)
	}
}

// destinationsFile checks that DESTINATIONS_FILE is a key of a ConfigMap
// mounted in the container, and that every variable the file's secret_env
// fields name is one the container has.
func (c *k8sChecker) destinationsFile(where string, spec *corev1.PodSpec, ctr *corev1.Container, env map[string]envValue) {
	v, ok := env["DESTINATIONS_FILE"]
	if !ok || !v.known || !path.IsAbs(v.literal) {
		c.p.add(where, "DESTINATIONS_FILE must be the absolute path of the destinations file in a mounted ConfigMap (the default is relative to the working directory)")
		return
	}
	file := path.Clean(v.literal)
	var cmName, key string
	for _, vm := range ctr.VolumeMounts {
		var vol *corev1.Volume
		for i := range spec.Volumes {
			if spec.Volumes[i].Name == vm.Name {
				vol = &spec.Volumes[i]
			}
		}
		if vol == nil {
			c.p.add(where, "volumeMount %q: no such volume", vm.Name)
			continue
		}
		if vol.ConfigMap == nil {
			continue
		}
		mount := path.Clean(vm.MountPath)
		var rel string
		switch {
		case vm.SubPath != "" && mount == file:
			rel = vm.SubPath
		case vm.SubPath == "" && path.Dir(file) == mount:
			rel = path.Base(file)
		default:
			continue
		}
		cmName, key = vol.ConfigMap.Name, rel
		for _, it := range vol.ConfigMap.Items {
			if it.Path == rel {
				key = it.Key
			}
		}
	}
	if cmName == "" {
		c.p.add(where, "DESTINATIONS_FILE=%s is not in a mounted ConfigMap volume", file)
		return
	}
	cm, ok := c.m.configMaps[cmName]
	if !ok {
		c.p.add(where, "ConfigMap %q (DESTINATIONS_FILE) is not in the manifests", cmName)
		return
	}
	data, ok := cm.Data[key]
	if !ok {
		c.p.add(where, "ConfigMap %q has no key %q (DESTINATIONS_FILE=%s)", cmName, key, file)
		return
	}
	envs, err := secretEnvs([]byte(data))
	if err != nil {
		c.p.add(where, "ConfigMap %s key %s: %v", cmName, key, err)
		return
	}
	for _, d := range slices.Sorted(maps.Keys(envs)) {
		for _, n := range envs[d] {
			if _, ok := env[n]; !ok {
				c.p.add(where, "destination %s: its secret_env %s is not a variable of the container (a key of the Secret it reads with envFrom)", d, n)
			}
		}
	}
}
