package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"

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
			m.secrets[o.Name] = append(slices.Collect(maps.Keys(o.Data)), slices.Collect(maps.Keys(o.StringData))...)
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
		checkCNPGCluster(c.p, cl)
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
	s := d.Spec.Strategy.RollingUpdate
	c.p.check(where, rule{s != nil && s.MaxUnavailable != nil && s.MaxUnavailable.IntValue() != 0 && d.Name == "hub", "maxUnavailable should be 0: a rollout must not reduce ingest capacity"})
	c.pod(where, &d.Spec.Template.Spec, false)
	c.p.check(where,
		rule{c.production && d.Spec.Replicas != nil && c.hpaFor(d.Name) != nil, "has spec.replicas although an HPA scales it: every apply would reset the replica count"},
		rule{c.production && c.replicas(d) < 2, fmt.Sprintf("runs %d replica(s); production wants at least 2", c.replicas(d))})
}

func (c *k8sChecker) job(j *batchv1.Job) {
	where := "Job " + j.Name
	rp := j.Spec.Template.Spec.RestartPolicy
	c.p.check(where,
		rule{rp != corev1.RestartPolicyNever && rp != corev1.RestartPolicyOnFailure, fmt.Sprintf("restartPolicy must be Never or OnFailure, got %q", rp)},
		rule{j.Spec.BackoffLimit == nil || j.Spec.ActiveDeadlineSeconds == nil, "set backoffLimit and activeDeadlineSeconds: a failing migration must end"})
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
	c.p.check(where,
		rule{spec.SecurityContext == nil || spec.SecurityContext.SeccompProfile == nil, "set securityContext.seccompProfile (RuntimeDefault)"},
		rule{spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken, "automountServiceAccountToken should be false: hookhub does not call the Kubernetes API"})
	for i := range spec.Containers {
		c.container(fmt.Sprintf("%s container %s", where, spec.Containers[i].Name), spec, &spec.Containers[i], isJob)
	}
}

func (c *k8sChecker) container(where string, spec *corev1.PodSpec, ctr *corev1.Container, isJob bool) {
	for _, msg := range validation.IsDNS1123Label(ctr.Name) {
		c.p.add(where, "name: %s", msg)
	}
	// Image.
	tag := ""
	if i := strings.LastIndex(ctr.Image, ":"); i > strings.LastIndex(ctr.Image, "/") {
		tag = ctr.Image[i+1:]
	}
	c.p.check(where,
		rule{ctr.Image == "", "no image"},
		rule{c.production && !strings.Contains(ctr.Image, "@sha256:") && (tag == "" || tag == "latest" || tag == "dev"), fmt.Sprintf("image %q: production images need a release tag or digest", ctr.Image)},
		rule{c.production && !strings.Contains(strings.SplitN(ctr.Image, "/", 2)[0], "."), fmt.Sprintf("image %q: name the registry explicitly in production", ctr.Image)})
	bin := binaryOf(ctr.Image)
	// Security.
	sc := ctr.SecurityContext
	nonRoot := spec.SecurityContext != nil && spec.SecurityContext.RunAsNonRoot != nil && *spec.SecurityContext.RunAsNonRoot
	if sc != nil && sc.RunAsNonRoot != nil {
		nonRoot = *sc.RunAsNonRoot
	}
	req, lim := ctr.Resources.Requests, ctr.Resources.Limits
	c.p.check(where,
		rule{!nonRoot, "must run as non-root (runAsNonRoot: true)"},
		rule{sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem, "readOnlyRootFilesystem must be true"},
		rule{sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation, "allowPrivilegeEscalation must be false"},
		rule{sc == nil || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL"), "capabilities must drop ALL"},
		// Resources.
		rule{req.Cpu().IsZero() || req.Memory().IsZero(), "set cpu and memory requests"})
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
	checkEnvNames(c.p, where, bin, slices.Sorted(maps.Keys(env)), c.sets)
	c.binaryRules(where, spec, ctr, bin, env, ports, isJob)
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
	c.p.check(where, rule{pdb.Spec.MinAvailable == nil && pdb.Spec.MaxUnavailable == nil, "set minAvailable or maxUnavailable"})
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
