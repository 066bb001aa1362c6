package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// cnpgAppSecretKeys are the keys of the "<cluster>-app" Secret that
// CloudNativePG generates for the application user.
var cnpgAppSecretKeys = []string{"username", "user", "password", "host", "port", "dbname", "uri", "jdbc-uri", "pgpass", "fqdn-uri", "fqdn-jdbc-uri"}

// manifests is everything read from the input files.
type manifests struct {
	deployments []*appsv1.Deployment
	jobs        []*batchv1.Job
	services    []*corev1.Service
	configMaps  map[string]*corev1.ConfigMap
	secrets     map[string][]string // name -> keys (Secrets in the input, CNPG app secrets)
	pdbs        []*policyv1.PodDisruptionBudget
	hpas        []*autoscalingv2.HorizontalPodAutoscaler
	netpols     []*networkingv1.NetworkPolicy
	namespaces  []string
	namespaced  []metav1.Object // for the namespace check
	clusters    []*cnpgCluster
}

func runK8s(args []string) ([]string, error) {
	fs := newFlags("k8s")
	production := fs.Bool("production", false, "apply the production rules (pinned images, R3 stream, all NATS nodes listed)")
	envDir := fs.String("env-dir", "", "directory of <binary>.env files")
	natsValues := fs.String("nats-values", "", "the NATS Helm chart values (deploy/nats/values.yaml)")
	extra := fs.String("extra", "", "comma-separated files applied separately with -n (CloudNativePG Cluster, Secret templates): read for references, exempt from the namespace rule")
	_ = fs.Parse(args)
	if fs.NArg() == 0 || *envDir == "" || *natsValues == "" {
		return nil, errors.New("need -env-dir, -nats-values and at least one manifest file")
	}
	sets, err := loadEnvSets(*envDir)
	if err != nil {
		return nil, err
	}
	var p problems
	natsReplicas := checkNATSValues(&p, *natsValues)
	m := &manifests{configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string][]string{}}
	for _, f := range fs.Args() {
		if err := m.read(&p, f); err != nil {
			return nil, err
		}
	}
	inBuild := len(m.namespaced) // objects of the kustomize build(s)
	if *extra != "" {
		for _, f := range strings.Split(*extra, ",") {
			if err := m.read(&p, f); err != nil {
				return nil, err
			}
		}
	}
	m.namespaced = m.namespaced[:inBuild]
	c := k8sChecker{p: &p, m: m, sets: sets, production: *production, natsReplicas: natsReplicas}
	c.run()
	return p, nil
}

func (m *manifests) read(p *problems, file string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme, policyv1.AddToScheme, autoscalingv2.AddToScheme, networkingv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	decoder := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		where := fmt.Sprintf("%s#%d", file, i)
		js, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			p.add(where, "YAML: %v", err)
			continue
		}
		var tm metav1.TypeMeta
		if err := json.Unmarshal(js, &tm); err != nil {
			p.add(where, "%v", err)
			continue
		}
		if tm.APIVersion == "postgresql.cnpg.io/v1" && tm.Kind == "Cluster" {
			cl, err := decodeCNPGCluster(js)
			if err != nil {
				p.add(where, "CloudNativePG Cluster: %v", err)
				continue
			}
			m.clusters = append(m.clusters, cl)
			m.secrets[cl.Metadata.Name+"-app"] = cnpgAppSecretKeys
			m.namespaced = append(m.namespaced, &cl.Metadata)
			continue
		}
		obj, _, err := decoder.Decode(js, nil, nil)
		if err != nil {
			p.add(where, "%s %s: %v", tm.APIVersion, tm.Kind, err)
			continue
		}
		meta := obj.(metav1.Object)
		where = fmt.Sprintf("%s %s", tm.Kind, meta.GetName())
		checkMeta(p, where, meta)
		switch o := obj.(type) {
		case *corev1.Namespace:
			m.namespaces = append(m.namespaces, o.Name)
			continue
		case *appsv1.Deployment:
			m.deployments = append(m.deployments, o)
		case *batchv1.Job:
			m.jobs = append(m.jobs, o)
		case *corev1.Service:
			m.services = append(m.services, o)
		case *corev1.ConfigMap:
			m.configMaps[o.Name] = o
		case *corev1.Secret:
			var keys []string
			for k := range o.Data {
				keys = append(keys, k)
			}
			for k := range o.StringData {
				keys = append(keys, k)
			}
			m.secrets[o.Name] = keys
		case *policyv1.PodDisruptionBudget:
			m.pdbs = append(m.pdbs, o)
		case *autoscalingv2.HorizontalPodAutoscaler:
			m.hpas = append(m.hpas, o)
		case *networkingv1.NetworkPolicy:
			m.netpols = append(m.netpols, o)
		default:
			p.add(where, "kind %s is not expected in hookhub's manifests (extend deploy/check)", tm.Kind)
		}
		m.namespaced = append(m.namespaced, meta)
	}
}

func stripComments(doc []byte) []byte {
	var out []byte
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			out = append(out, line...)
			out = append(out, '\n')
		}
	}
	return out
}

func checkMeta(p *problems, where string, meta metav1.Object) {
	for _, msg := range validation.IsDNS1123Subdomain(meta.GetName()) {
		p.add(where, "name: %s", msg)
	}
	checkLabels(p, where, meta.GetLabels())
}

func checkLabels(p *problems, where string, l map[string]string) {
	for k, v := range l {
		for _, msg := range validation.IsQualifiedName(k) {
			p.add(where, "label key %q: %s", k, msg)
		}
		for _, msg := range validation.IsValidLabelValue(v) {
			p.add(where, "label %s=%q: %s", k, v, msg)
		}
	}
}

type k8sChecker struct {
	p            *problems
	m            *manifests
	sets         envSets
	production   bool
	natsReplicas int
}

func (c *k8sChecker) run() {
	for _, d := range c.m.deployments {
		c.deployment(d)
		c.hubIngress(d)
		c.egress(d)
	}
	for _, j := range c.m.jobs {
		c.job(j)
	}
	for _, s := range c.m.services {
		c.service(s)
	}
	for _, pdb := range c.m.pdbs {
		c.pdb(pdb)
	}
	for _, h := range c.m.hpas {
		c.hpa(h)
	}
	for _, cl := range c.m.clusters {
		checkCNPGCluster(c.p, cl, c.production)
	}
	c.databaseRoles()
	if c.production {
		c.productionNamespace()
	}
	if len(c.m.deployments) == 0 {
		c.p.add("manifests", "no Deployment found")
	}
}

func (c *k8sChecker) productionNamespace() {
	if len(c.m.namespaces) != 1 {
		c.p.add("production", "want exactly one Namespace object, got %d", len(c.m.namespaces))
		return
	}
	for _, o := range c.m.namespaced {
		if o.GetNamespace() != c.m.namespaces[0] {
			c.p.add("production", "%s is in namespace %q, not %q", o.GetName(), o.GetNamespace(), c.m.namespaces[0])
		}
	}
}

func (c *k8sChecker) deployment(d *appsv1.Deployment) {
	where := "Deployment " + d.Name
	if d.Spec.Selector == nil {
		c.p.add(where, "no selector")
		return
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || sel.Empty() || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		c.p.add(where, "selector %v does not match the pod template's labels %v", d.Spec.Selector.MatchLabels, d.Spec.Template.Labels)
	}
	checkLabels(c.p, where+" template", d.Spec.Template.Labels)
	if s := d.Spec.Strategy.RollingUpdate; s != nil && s.MaxUnavailable != nil && s.MaxUnavailable.IntValue() != 0 && d.Name == "hub" {
		c.p.add(where, "maxUnavailable should be 0: a rollout must not reduce ingest capacity")
	}
	c.pod(where, &d.Spec.Template.Spec, false)
	if c.production && d.Spec.Replicas != nil && c.hpaFor(d.Name) != nil {
		c.p.add(where, "has spec.replicas although an HPA scales it: every apply would reset the replica count")
	}
	if c.production && c.replicas(d) < 2 {
		c.p.add(where, "runs %d replica(s); production wants at least 2", c.replicas(d))
	}
}

func (c *k8sChecker) job(j *batchv1.Job) {
	where := "Job " + j.Name
	rp := j.Spec.Template.Spec.RestartPolicy
	if rp != corev1.RestartPolicyNever && rp != corev1.RestartPolicyOnFailure {
		c.p.add(where, "restartPolicy must be Never or OnFailure, got %q", rp)
	}
	if j.Spec.BackoffLimit == nil || j.Spec.ActiveDeadlineSeconds == nil {
		c.p.add(where, "set backoffLimit and activeDeadlineSeconds: a failing migration must end")
	}
	c.pod(where, &j.Spec.Template.Spec, true)
}

// replicas is a Deployment's replica count, or its HPA's minimum.
func (c *k8sChecker) replicas(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas != nil {
		return *d.Spec.Replicas
	}
	if h := c.hpaFor(d.Name); h != nil && h.Spec.MinReplicas != nil {
		return *h.Spec.MinReplicas
	}
	return 1
}

func (c *k8sChecker) hpaFor(name string) *autoscalingv2.HorizontalPodAutoscaler {
	for _, h := range c.m.hpas {
		if h.Spec.ScaleTargetRef.Kind == "Deployment" && h.Spec.ScaleTargetRef.Name == name {
			return h
		}
	}
	return nil
}

func (c *k8sChecker) pod(where string, spec *corev1.PodSpec, isJob bool) {
	psc := spec.SecurityContext
	if psc == nil || psc.SeccompProfile == nil {
		c.p.add(where, "set securityContext.seccompProfile (RuntimeDefault)")
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		c.p.add(where, "automountServiceAccountToken should be false: hookhub does not call the Kubernetes API")
	}
	for i := range spec.Containers {
		ctr := &spec.Containers[i]
		cw := fmt.Sprintf("%s container %s", where, ctr.Name)
		c.container(cw, spec, ctr, isJob)
	}
}

func (c *k8sChecker) container(where string, spec *corev1.PodSpec, ctr *corev1.Container, isJob bool) {
	for _, msg := range validation.IsDNS1123Label(ctr.Name) {
		c.p.add(where, "name: %s", msg)
	}
	// Image.
	if ctr.Image == "" {
		c.p.add(where, "no image")
	}
	bin := binaryOf(ctr.Image)
	if c.production {
		tag := ""
		if i := strings.LastIndex(ctr.Image, ":"); i > strings.LastIndex(ctr.Image, "/") {
			tag = ctr.Image[i+1:]
		}
		if !strings.Contains(ctr.Image, "@sha256:") && (tag == "" || tag == "latest" || tag == "dev") {
			c.p.add(where, "image %q: production images need a release tag or digest", ctr.Image)
		}
		if !strings.Contains(strings.SplitN(ctr.Image, "/", 2)[0], ".") {
			c.p.add(where, "image %q: name the registry explicitly in production", ctr.Image)
		}
	}
	// Security.
	sc := ctr.SecurityContext
	nonRoot := spec.SecurityContext != nil && spec.SecurityContext.RunAsNonRoot != nil && *spec.SecurityContext.RunAsNonRoot
	if sc != nil && sc.RunAsNonRoot != nil {
		nonRoot = *sc.RunAsNonRoot
	}
	if !nonRoot {
		c.p.add(where, "must run as non-root (runAsNonRoot: true)")
	}
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		c.p.add(where, "readOnlyRootFilesystem must be true")
	}
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		c.p.add(where, "allowPrivilegeEscalation must be false")
	}
	if sc == nil || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		c.p.add(where, "capabilities must drop ALL")
	}
	// Resources.
	req, lim := ctr.Resources.Requests, ctr.Resources.Limits
	if req.Cpu().IsZero() || req.Memory().IsZero() {
		c.p.add(where, "set cpu and memory requests")
	}
	if lim.Memory().IsZero() {
		c.p.add(where, "set a memory limit")
	} else if lim.Memory().Cmp(*req.Memory()) < 0 {
		c.p.add(where, "memory limit %s below the request %s", lim.Memory(), req.Memory())
	}
	// Ports.
	ports := map[string]int32{}
	for _, port := range ctr.Ports {
		if port.Name != "" {
			for _, msg := range validation.IsValidPortName(port.Name) {
				c.p.add(where, "port name %q: %s", port.Name, msg)
			}
			if _, dup := ports[port.Name]; dup {
				c.p.add(where, "duplicate port name %q", port.Name)
			}
			ports[port.Name] = port.ContainerPort
		}
	}
	for _, pr := range []struct {
		name  string
		probe *corev1.Probe
	}{{"readiness", ctr.ReadinessProbe}, {"liveness", ctr.LivenessProbe}, {"startup", ctr.StartupProbe}} {
		if pr.probe == nil {
			continue
		}
		var port string
		if g := pr.probe.HTTPGet; g != nil && g.Port.StrVal != "" {
			port = g.Port.StrVal
		}
		if t := pr.probe.TCPSocket; t != nil && t.Port.StrVal != "" {
			port = t.Port.StrVal
		}
		if _, ok := ports[port]; port != "" && !ok {
			c.p.add(where, "%s probe uses port %q, which the container does not declare", pr.name, port)
		}
	}
	// Environment: names valid, references resolvable, known to the binary.
	env := c.environment(where, ctr)
	if bin == "" {
		return
	}
	var names []string
	for n := range env {
		names = append(names, n)
	}
	slices.Sort(names)
	checkEnvNames(c.p, where, bin, names, c.sets)
	c.binaryRules(where, spec, ctr, bin, env, ports, isJob)
}

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

// binaryRules are the rules specific to what each hookhub binary does.
func (c *k8sChecker) binaryRules(where string, spec *corev1.PodSpec, ctr *corev1.Container, bin string, env map[string]envValue, ports map[string]int32, isJob bool) {
	prefix := binaries[bin]
	args := append(slices.Clone(ctr.Command), ctr.Args...)
	require := func(names ...string) {
		for _, n := range names {
			if _, ok := env[n]; !ok {
				c.p.add(where, "%s is not set", n)
			}
		}
	}
	duration := func(name string, def time.Duration) time.Duration {
		v, ok := env[name]
		if !ok || !v.known {
			return def
		}
		d, err := time.ParseDuration(v.literal)
		if err != nil {
			c.p.add(where, "%s=%q is not a duration", name, v.literal)
			return def
		}
		return d
	}
	// listenPort checks that the container port named portName is the
	// port of the variable's listen address (def when unset).
	listenPort := func(variable, portName string, def int32) {
		addr := ""
		if v, ok := env[prefix+variable]; ok && v.known {
			addr = v.literal
		}
		want := def
		if addr != "" {
			_, port, err := net.SplitHostPort(addr)
			n, err2 := strconv.Atoi(port)
			if err != nil || err2 != nil {
				c.p.add(where, "%s%s=%q is not host:port", prefix, variable, addr)
				return
			}
			want = int32(n)
		}
		if got, ok := ports[portName]; !ok || got != want {
			c.p.add(where, "container port %q is %d, but the process listens on %d (%s%s)", portName, got, want, prefix, variable)
		}
	}
	httpPort := func(def int32) { listenPort("HTTP_ADDR", "http", def) }
	grace := int64(30)
	if spec.TerminationGracePeriodSeconds != nil {
		grace = *spec.TerminationGracePeriodSeconds
	}
	if bin == "hub" && slices.Contains(args, "migrate") {
		if !isJob {
			c.p.add(where, "`hub migrate` belongs in a Job")
		}
		if !slices.Contains(args, "up") {
			c.p.add(where, "the migration Job should run `hub migrate up`, got %v", args)
		}
		require("HUB_DATABASE_URL")
		return
	}
	if isJob {
		c.p.add(where, "a Job running %s %v: expected only `hub migrate up`", bin, args)
		return
	}
	require(prefix+"DATABASE_URL", prefix+"NATS_URL")
	if c.production {
		c.natsURL(where, prefix+"NATS_URL", env)
	}
	if bin == "hub" {
		if len(args) == 0 || args[0] != "serve" {
			c.p.add(where, "the hub Deployment should run `hub serve`, got %v", args)
		}
		_, paddle := env["HUB_PADDLE_SECRETS"]
		_, clerk := env["HUB_CLERK_SECRETS"]
		if !paddle && !clerk {
			c.p.add(where, "no provider secret (HUB_PADDLE_SECRETS or HUB_CLERK_SECRETS): `hub serve` refuses to start")
		}
		httpPort(8080)
		probePath(c.p, where, "readiness", ctr.ReadinessProbe, "/readyz")
		probePath(c.p, where, "liveness", ctr.LivenessProbe, "/healthz")
		// /admin/, /metrics and pprof stay off the webhook port, and the
		// probes use the admin port, which HUB_MAX_CONNS never fills.
		if v, ok := env["HUB_ADMIN_ADDR"]; !ok || (v.known && v.literal == "") {
			c.p.add(where, "HUB_ADMIN_ADDR is not set: /admin/ and /metrics would share the webhook port")
		} else {
			listenPort("ADMIN_ADDR", "admin", 0)
			for _, pr := range []*corev1.Probe{ctr.ReadinessProbe, ctr.LivenessProbe} {
				if pr != nil && pr.HTTPGet != nil && pr.HTTPGet.Port.StrVal != "admin" {
					c.p.add(where, "probe of %s uses port %q: probe the admin port", pr.HTTPGet.Path, pr.HTTPGet.Port.String())
				}
			}
		}
		var pause int64
		if ctr.Lifecycle == nil || ctr.Lifecycle.PreStop == nil {
			c.p.add(where, "needs a preStop pause, so endpoints are updated before SIGTERM closes the listener")
		} else if s := ctr.Lifecycle.PreStop.Sleep; s != nil {
			pause = s.Seconds
		} else if e := ctr.Lifecycle.PreStop.Exec; e != nil && len(e.Command) == 2 && e.Command[0] == "sleep" {
			pause, _ = strconv.ParseInt(e.Command[1], 10, 64)
		}
		if pause < 2 || pause > 15 {
			c.p.add(where, "preStop pause %ds: want 2-15s", pause)
		}
		shutdown := duration("HUB_SHUTDOWN_TIMEOUT", 25*time.Second)
		if need := pause + int64(shutdown/time.Second); grace <= need {
			c.p.add(where, "terminationGracePeriodSeconds %d must exceed preStop %ds + HUB_SHUTDOWN_TIMEOUT %s", grace, pause, shutdown)
		}
		if c.production {
			if v := env["HUB_STREAM_REPLICAS"]; v.literal != "3" {
				c.p.add(where, "HUB_STREAM_REPLICAS=%q: production runs R3 streams", v.literal)
			}
		}
		return
	}
	// Subscribers.
	httpPort(map[string]int32{"credits": 9101, "email": 9102, "downgrade": 9103, "destinations": 8085}[bin])
	probePath(c.p, where, "readiness", ctr.ReadinessProbe, "/healthz")
	if ctr.LivenessProbe == nil {
		c.p.add(where, "no liveness probe")
	}
	shutdown := duration(prefix+"SHUTDOWN_TIMEOUT", 25*time.Second)
	if need := int64(shutdown/time.Second) + 5; grace <= need {
		c.p.add(where, "terminationGracePeriodSeconds %d must exceed %sSHUTDOWN_TIMEOUT %s + 5s of HTTP shutdown", grace, prefix, shutdown)
	}
	if bin == "destinations" {
		c.destinationsFile(where, spec, ctr, env)
	}
	if bin == "email" && c.production {
		if v := env["EMAIL_SMTP_ADDR"]; v.known && (v.literal == "log" || v.literal == "") {
			c.p.add(where, "EMAIL_SMTP_ADDR=%q: production sends email", v.literal)
		}
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

// podsMatching returns the Deployments and Jobs whose pods sel selects.
func (c *k8sChecker) podsMatching(sel labels.Selector) (deps []*appsv1.Deployment, jobs []*batchv1.Job) {
	for _, d := range c.m.deployments {
		if sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			deps = append(deps, d)
		}
	}
	for _, j := range c.m.jobs {
		if sel.Matches(labels.Set(j.Spec.Template.Labels)) {
			jobs = append(jobs, j)
		}
	}
	return deps, jobs
}

func (c *k8sChecker) service(s *corev1.Service) {
	where := "Service " + s.Name
	if len(s.Spec.Selector) == 0 {
		c.p.add(where, "no selector")
		return
	}
	deps, jobs := c.podsMatching(labels.SelectorFromSet(s.Spec.Selector))
	if len(deps) != 1 || len(jobs) != 0 {
		c.p.add(where, "selector %v matches %d Deployment(s) and %d Job(s); want exactly one Deployment", s.Spec.Selector, len(deps), len(jobs))
		return
	}
	for _, port := range s.Spec.Ports {
		if port.TargetPort.StrVal == "" {
			continue
		}
		found := false
		for _, ctr := range deps[0].Spec.Template.Spec.Containers {
			for _, cp := range ctr.Ports {
				found = found || cp.Name == port.TargetPort.StrVal
			}
		}
		if !found {
			c.p.add(where, "targetPort %q is not a port of Deployment %s", port.TargetPort.StrVal, deps[0].Name)
		}
	}
}

// hubIngress checks that NetworkPolicies keep the hub's admin port (its
// container port "admin") private and its webhook port ("http") open: some
// policy selecting the hub's pods isolates them for ingress, a rule admits
// everyone to the webhook port, and no rule admits everyone to the admin
// port (a rule without peers, an ipBlock of every address, any pod of any
// namespace, or any pod of the hub's namespace).
func (c *k8sChecker) hubIngress(d *appsv1.Deployment) {
	ports := map[string]int32{}
	for _, ctr := range d.Spec.Template.Spec.Containers {
		if binaryOf(ctr.Image) == "hub" {
			for _, p := range ctr.Ports {
				ports[p.Name] = p.ContainerPort
			}
		}
	}
	if _, ok := ports["admin"]; !ok {
		return
	}
	where := "Deployment " + d.Name
	isolated, webhookOpen := false, false
	for _, np := range c.m.netpols {
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		if err != nil || !sel.Matches(labels.Set(d.Spec.Template.Labels)) || !ingressPolicy(np) {
			continue
		}
		isolated = true
		for i, r := range np.Spec.Ingress {
			if len(r.From) > 0 && !slices.ContainsFunc(r.From, openPeer) {
				continue
			}
			if rulePort(r, "admin", ports["admin"]) {
				c.p.add("NetworkPolicy "+np.Name, "ingress rule %d admits everyone to the hub's admin port %d: list Prometheus and the operators' pods", i+1, ports["admin"])
			}
			webhookOpen = webhookOpen || rulePort(r, "http", ports["http"])
		}
	}
	switch {
	case !isolated:
		c.p.add(where, "no NetworkPolicy selects its pods for ingress: every pod in the cluster reaches its admin port %d", ports["admin"])
	case !webhookOpen:
		c.p.add(where, "its NetworkPolicies admit no one from everywhere to the webhook port %d", ports["http"])
	}
}

// egress checks the NetworkPolicies that restrict a Deployment's egress:
// together they must let its pods resolve names (DNS, 53/UDP) and reach
// Postgres (5432) and NATS (4222). The destinations' pods must be so
// restricted (a destination may name any address, private ones included:
// the policy bounds where events can go) and reach https endpoints (443).
// Only numeric ports are recognised in egress rules.
func (c *k8sChecker) egress(d *appsv1.Deployment) {
	where := "Deployment " + d.Name
	isDest := false
	for _, ctr := range d.Spec.Template.Spec.Containers {
		isDest = isDest || binaryOf(ctr.Image) == "destinations"
	}
	var pols []*networkingv1.NetworkPolicy
	for _, np := range c.m.netpols {
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		if err == nil && sel.Matches(labels.Set(d.Spec.Template.Labels)) && egressPolicy(np) {
			pols = append(pols, np)
		}
	}
	if len(pols) == 0 {
		if isDest {
			c.p.add(where, "no NetworkPolicy restricts its egress: a destination may name any address (deploy/k8s/base/destinations.yaml)")
		}
		return
	}
	allows := func(port int32, proto corev1.Protocol) bool {
		for _, np := range pols {
			for _, r := range np.Spec.Egress {
				if len(r.Ports) == 0 {
					return true
				}
				for _, p := range r.Ports {
					pp := corev1.ProtocolTCP
					if p.Protocol != nil {
						pp = *p.Protocol
					}
					if pp != proto {
						continue
					}
					switch {
					case p.Port == nil:
						return true
					case p.Port.Type == intstr.Int && p.Port.IntVal == port:
						return true
					case p.Port.Type == intstr.Int && p.EndPort != nil && p.Port.IntVal <= port && port <= *p.EndPort:
						return true
					}
				}
			}
		}
		return false
	}
	need := []struct {
		port  int32
		proto corev1.Protocol
		what  string
	}{{53, corev1.ProtocolUDP, "DNS"}, {5432, corev1.ProtocolTCP, "Postgres"}, {4222, corev1.ProtocolTCP, "NATS"}}
	if isDest {
		need = append(need, struct {
			port  int32
			proto corev1.Protocol
			what  string
		}{443, corev1.ProtocolTCP, "https endpoints"})
	}
	for _, n := range need {
		if !allows(n.port, n.proto) {
			c.p.add(where, "its egress NetworkPolicies do not allow port %d/%s (%s)", n.port, n.proto, n.what)
		}
	}
}

// egressPolicy reports whether np restricts egress.
func egressPolicy(np *networkingv1.NetworkPolicy) bool {
	if len(np.Spec.PolicyTypes) == 0 {
		return len(np.Spec.Egress) > 0
	}
	return slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress)
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

// ingressPolicy reports whether np restricts ingress.
func ingressPolicy(np *networkingv1.NetworkPolicy) bool {
	return len(np.Spec.PolicyTypes) == 0 || slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress)
}

// rulePort reports whether the ingress rule r covers the container port
// named name, number num.
func rulePort(r networkingv1.NetworkPolicyIngressRule, name string, num int32) bool {
	if len(r.Ports) == 0 {
		return true
	}
	for _, p := range r.Ports {
		switch {
		case p.Port == nil:
			return true
		case p.Port.Type == intstr.String && p.Port.StrVal == name:
			return true
		case p.Port.Type == intstr.Int && p.Port.IntVal == num:
			return true
		case p.Port.Type == intstr.Int && p.EndPort != nil && p.Port.IntVal <= num && num <= *p.EndPort:
			return true
		}
	}
	return false
}

// openPeer reports whether a peer admits everyone: every address, any pod
// of any namespace, or any pod of the policy's namespace (a peer without
// a pod selector but with a namespace selector of labels is restricted).
func openPeer(p networkingv1.NetworkPolicyPeer) bool {
	empty := func(s *metav1.LabelSelector) bool {
		return s == nil || (len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0)
	}
	if p.IPBlock != nil {
		_, n, err := net.ParseCIDR(p.IPBlock.CIDR)
		if err != nil {
			return false
		}
		ones, _ := n.Mask.Size()
		return ones == 0
	}
	return empty(p.PodSelector) && empty(p.NamespaceSelector)
}

func (c *k8sChecker) pdb(pdb *policyv1.PodDisruptionBudget) {
	where := "PodDisruptionBudget " + pdb.Name
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil || sel.Empty() {
		c.p.add(where, "needs a non-empty selector")
		return
	}
	deps, jobs := c.podsMatching(sel)
	if len(deps) != 1 || len(jobs) != 0 {
		c.p.add(where, "selector matches %d Deployment(s) and %d Job(s); want exactly one Deployment", len(deps), len(jobs))
		return
	}
	n := c.replicas(deps[0])
	if ma := pdb.Spec.MinAvailable; ma != nil && ma.Type == 0 && int32(ma.IntValue()) >= n {
		c.p.add(where, "minAvailable %d with %d replica(s) of %s blocks every eviction (node drains hang)", ma.IntValue(), n, deps[0].Name)
	}
	if pdb.Spec.MinAvailable == nil && pdb.Spec.MaxUnavailable == nil {
		c.p.add(where, "set minAvailable or maxUnavailable")
	}
}

func (c *k8sChecker) hpa(h *autoscalingv2.HorizontalPodAutoscaler) {
	where := "HorizontalPodAutoscaler " + h.Name
	var target *appsv1.Deployment
	for _, d := range c.m.deployments {
		if h.Spec.ScaleTargetRef.Kind == "Deployment" && d.Name == h.Spec.ScaleTargetRef.Name {
			target = d
		}
	}
	if target == nil {
		c.p.add(where, "scaleTargetRef %s/%s is not in the manifests", h.Spec.ScaleTargetRef.Kind, h.Spec.ScaleTargetRef.Name)
		return
	}
	if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 2 {
		c.p.add(where, "minReplicas should be at least 2")
	} else if *h.Spec.MinReplicas > h.Spec.MaxReplicas {
		c.p.add(where, "minReplicas %d > maxReplicas %d", *h.Spec.MinReplicas, h.Spec.MaxReplicas)
	}
	for _, metric := range h.Spec.Metrics {
		if metric.Resource == nil || metric.Resource.Target.Type != autoscalingv2.UtilizationMetricType {
			continue
		}
		for _, ctr := range target.Spec.Template.Spec.Containers {
			if q, ok := ctr.Resources.Requests[metric.Resource.Name]; !ok || q.IsZero() {
				c.p.add(where, "scales on %s utilization, but container %s has no %s request", metric.Resource.Name, ctr.Name, metric.Resource.Name)
			}
		}
	}
}

// checkNATSValues reads the NATS Helm chart values and returns the cluster
// size (0 if unreadable).
func checkNATSValues(p *problems, file string) int {
	where := file
	b, err := os.ReadFile(file)
	if err != nil {
		p.add(where, "%v", err)
		return 0
	}
	var v map[string]any
	if err := yaml.UnmarshalStrict(b, &v); err != nil {
		p.add(where, "YAML: %v", err)
		return 0
	}
	get := func(path string) any {
		var cur any = v
		for _, k := range strings.Split(path, ".") {
			m, ok := cur.(map[string]any)
			if !ok {
				return nil
			}
			cur = m[k]
		}
		return cur
	}
	for _, path := range []string{"config.cluster.enabled", "config.jetstream.enabled", "config.jetstream.fileStore.enabled", "config.jetstream.fileStore.pvc.enabled", "promExporter.enabled"} {
		if get(path) != true {
			p.add(where, "%s must be true", path)
		}
	}
	replicas, _ := get("config.cluster.replicas").(float64)
	if replicas < 3 || int(replicas)%2 == 0 {
		p.add(where, "config.cluster.replicas must be odd and at least 3 (Raft quorum), got %v", get("config.cluster.replicas"))
	}
	size, _ := get("config.jetstream.fileStore.pvc.size").(string)
	maxSize, _ := get("config.jetstream.fileStore.maxSize").(string)
	pq, err1 := resource.ParseQuantity(size)
	mq, err2 := resource.ParseQuantity(maxSize)
	if err1 != nil || err2 != nil || mq.Cmp(pq) >= 0 {
		p.add(where, "config.jetstream.fileStore.maxSize (%q) must be a quantity below pvc.size (%q)", maxSize, size)
	}
	tag, _ := get("container.image.tag").(string)
	if !regexp.MustCompile(`^2\.(1[4-9]|[2-9][0-9])(\.[0-9]+)?(-alpine)?$`).MatchString(tag) {
		p.add(where, "container.image.tag %q: hookhub needs nats-server >= 2.14", tag)
	}
	return int(replicas)
}
