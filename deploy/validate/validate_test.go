package validate

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// render builds deploy/kubernetes and decodes every object strictly into its
// API type, keyed by kind/name.
func render(t *testing.T) map[string]any {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	rm, err := k.Run(filesys.MakeFsOnDisk(), "../kubernetes")
	if err != nil {
		t.Fatalf("kustomize build: %v", err)
	}
	objs := map[string]any{}
	for _, r := range rm.Resources() {
		raw, err := r.MarshalJSON()
		if err != nil {
			t.Fatalf("%s: %v", r.CurId(), err)
		}
		var obj any
		switch r.GetKind() {
		case "Deployment":
			obj = &appsv1.Deployment{}
		case "Service":
			obj = &corev1.Service{}
		case "ServiceAccount":
			obj = &corev1.ServiceAccount{}
		case "ConfigMap":
			obj = &corev1.ConfigMap{}
		case "Job":
			obj = &batchv1.Job{}
		case "PodDisruptionBudget":
			obj = &policyv1.PodDisruptionBudget{}
		case "HorizontalPodAutoscaler":
			obj = &autoscalingv2.HorizontalPodAutoscaler{}
		case "NetworkPolicy":
			obj = &networkingv1.NetworkPolicy{}
		default:
			t.Fatalf("%s: no API type to check this kind against; add it here", r.CurId())
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(obj); err != nil {
			t.Fatalf("%s does not match the %s API type: %v", r.CurId(), r.GetApiVersion(), err)
		}
		objs[r.GetKind()+"/"+r.GetName()] = obj
	}
	return objs
}

func TestKubernetes_RendersAndMatchesTheAPI(t *testing.T) {
	objs := render(t)
	for _, want := range []string{
		"Deployment/relay", "Service/relay-inference", "Service/relay-control", "ConfigMap/relay",
		"Job/relay-migrate", "PodDisruptionBudget/relay", "HorizontalPodAutoscaler/relay",
		"NetworkPolicy/relay", "ServiceAccount/relay",
	} {
		if objs[want] == nil {
			t.Errorf("missing %s", want)
		}
	}
}

func TestKubernetes_ProbesDrainAndPrivacy(t *testing.T) {
	objs := render(t)
	dep := objs["Deployment/relay"].(*appsv1.Deployment)
	cm := objs["ConfigMap/relay"].(*corev1.ConfigMap)
	c := dep.Spec.Template.Spec.Containers[0]
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("readiness probe must be GET /readyz: %+v", c.ReadinessProbe)
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("liveness probe must be GET /healthz: %+v", c.LivenessProbe)
	}
	drain, err := time.ParseDuration(cm.Data["RELAY_DRAIN_DELAY"])
	if err != nil {
		t.Fatalf("RELAY_DRAIN_DELAY: %v", err)
	}
	shutdown, err := time.ParseDuration(cm.Data["RELAY_SHUTDOWN_TIMEOUT"])
	if err != nil {
		t.Fatalf("RELAY_SHUTDOWN_TIMEOUT: %v", err)
	}
	grace := time.Duration(*dep.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second
	if grace <= drain+shutdown {
		t.Errorf("terminationGracePeriodSeconds %v must exceed drain %v + shutdown %v", grace, drain, shutdown)
	}
	// The readiness probe must notice the drain well inside the drain delay.
	rp := c.ReadinessProbe
	if notice := time.Duration(rp.PeriodSeconds*rp.FailureThreshold) * time.Second; notice >= drain {
		t.Errorf("readiness notices a drain after %v, not inside RELAY_DRAIN_DELAY %v", notice, drain)
	}
	if cm.Data["RELAY_MIGRATE_ON_START"] != "false" {
		t.Errorf("pods must leave migrations to the Job: RELAY_MIGRATE_ON_START = %q", cm.Data["RELAY_MIGRATE_ON_START"])
	}
	if sc := dep.Spec.Template.Spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Error("pods must run as non-root")
	}
	job := objs["Job/relay-migrate"].(*batchv1.Job)
	if args := strings.Join(job.Spec.Template.Spec.Containers[0].Args, " "); args != "migrate up" {
		t.Errorf("migration job args = %q", args)
	}
	// Both planes have a Service; only the inference port is open to all.
	np := objs["NetworkPolicy/relay"].(*networkingv1.NetworkPolicy)
	for _, rule := range np.Spec.Ingress {
		for _, p := range rule.Ports {
			if p.Port.IntValue() == 8081 && len(rule.From) == 0 {
				t.Error("the control plane port is open to every pod")
			}
		}
	}
	if objs["Service/relay-control"].(*corev1.Service).Spec.Type == corev1.ServiceTypeLoadBalancer {
		t.Error("the control plane must not be a LoadBalancer")
	}
	hpa := objs["HorizontalPodAutoscaler/relay"].(*autoscalingv2.HorizontalPodAutoscaler)
	if hpa.Spec.ScaleTargetRef.Name != dep.Name || *hpa.Spec.MinReplicas < 2 {
		t.Errorf("HPA must target the Deployment with at least 2 replicas: %+v", hpa.Spec)
	}
	if pdb := objs["PodDisruptionBudget/relay"].(*policyv1.PodDisruptionBudget); pdb.Spec.MinAvailable == nil {
		t.Error("PDB must keep a pod available")
	}
}

// compose is the part of the Compose file these checks read.
type compose struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Command     []string          `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
		Ports       []string          `yaml:"ports"`
		Healthcheck *struct {
			Test []string `yaml:"test"`
		} `yaml:"healthcheck"`
		Deploy struct {
			Replicas int `yaml:"replicas"`
		} `yaml:"deploy"`
		DependsOn map[string]struct {
			Condition string `yaml:"condition"`
		} `yaml:"depends_on"`
	} `yaml:"services"`
}

func TestCompose_ProductionShape(t *testing.T) {
	raw, err := os.ReadFile("../compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c compose
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatalf("parse compose.yaml: %v", err)
	}
	relay := c.Services["relay"]
	if relay.Deploy.Replicas != 2 {
		t.Errorf("relay replicas = %d, want 2", relay.Deploy.Replicas)
	}
	for _, name := range []string{"postgres", "redis", "relay"} {
		if c.Services[name].Healthcheck == nil {
			t.Errorf("%s has no health check", name)
		}
	}
	if relay.DependsOn["migrate"].Condition != "service_completed_successfully" {
		t.Errorf("relay must start after the migrate step: %+v", relay.DependsOn)
	}
	if got := strings.Join(c.Services["migrate"].Command, " "); got != "migrate up" {
		t.Errorf("migrate command = %q", got)
	}
	if relay.Environment["RELAY_MIGRATE_ON_START"] != "false" {
		t.Error("replicas must leave migrations to the migrate step")
	}
	if len(relay.Ports) != 0 {
		t.Errorf("relay replicas publish ports %v; only the proxies may", relay.Ports)
	}
	for name, s := range c.Services {
		for _, p := range s.Ports {
			if strings.HasSuffix(p, ":8081") && !strings.HasPrefix(p, "127.0.0.1:") {
				t.Errorf("%s publishes the control plane beyond the host's loopback: %s", name, p)
			}
		}
	}
	// Secrets come from the environment, never from the file.
	for _, v := range []string{"RELAY_MASTER_KEY", "RELAY_ADMIN_TOKEN", "POSTGRES_PASSWORD"} {
		if !strings.Contains(string(raw), "${"+v+":?") {
			t.Errorf("%s must be required from the environment (${%s:?…})", v, v)
		}
	}
}
