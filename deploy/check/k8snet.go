package main

import (
	"net"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

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
				if portsCover(r.Ports, "", port, proto) {
					return true
				}
			}
		}
		return false
	}
	type need struct {
		port  int32
		proto corev1.Protocol
		what  string
	}
	needs := []need{{53, corev1.ProtocolUDP, "DNS"}, {5432, corev1.ProtocolTCP, "Postgres"}, {4222, corev1.ProtocolTCP, "NATS"}}
	if isDest {
		needs = append(needs, need{443, corev1.ProtocolTCP, "https endpoints"})
	}
	for _, n := range needs {
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

// ingressPolicy reports whether np restricts ingress.
func ingressPolicy(np *networkingv1.NetworkPolicy) bool {
	return len(np.Spec.PolicyTypes) == 0 || slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress)
}

// rulePort reports whether the ingress rule r covers the container port
// named name, number num.
func rulePort(r networkingv1.NetworkPolicyIngressRule, name string, num int32) bool {
	return portsCover(r.Ports, name, num, "")
}

// portsCover reports whether a rule's ports cover the port named name (if
// not ""), number num, of protocol proto (any protocol if "").
func portsCover(ports []networkingv1.NetworkPolicyPort, name string, num int32, proto corev1.Protocol) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		if pp := corev1.ProtocolTCP; proto != "" {
			if p.Protocol != nil {
				pp = *p.Protocol
			}
			if pp != proto {
				continue
			}
		}
		switch {
		case p.Port == nil:
			return true
		case p.Port.Type == intstr.String && name != "" && p.Port.StrVal == name:
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
