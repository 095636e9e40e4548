package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/schedlab/schedlab/api/names"
	"github.com/schedlab/schedlab/api/v1alpha1"
)

const templateHashAnnotation = "schedlab.io/template-hash"

// ensureDaemonSet creates the agent DaemonSet of a running experiment, or
// updates it when the chosen nodes or the manager's configuration changed.
func (r *SchedExperimentReconciler) ensureDaemonSet(ctx context.Context, s *scope) error {
	if !s.measure() || s.terminal() || s.stop {
		return nil
	}
	want, err := r.daemonSetFor(s)
	if err != nil {
		return err
	}
	if s.ds == nil {
		if err := r.Client.Create(ctx, want); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return nil // created by an earlier reconcile; its event brings us back
			}
			return fmt.Errorf("creating DaemonSet %s: %w", want.Name, err)
		}
		s.ds = want
		s.log.Info("Created DaemonSet", "daemonset", want.Name, "nodes", len(s.chosen))
		s.event(corev1.EventTypeNormal, "CreatedDaemonSet", "Create",
			fmt.Sprintf("Created DaemonSet %s/%s for %d nodes", want.Namespace, want.Name, len(s.chosen)))
		return nil
	}
	if s.ds.Annotations[templateHashAnnotation] == want.Annotations[templateHashAnnotation] {
		return nil
	}
	upd := s.ds.DeepCopy()
	upd.Labels, upd.Annotations = want.Labels, want.Annotations
	upd.Spec.Template = want.Spec.Template
	if err := r.Client.Update(ctx, upd); err != nil {
		return fmt.Errorf("updating DaemonSet %s: %w", upd.Name, err)
	}
	s.ds = upd
	s.log.Info("Updated DaemonSet", "daemonset", upd.Name)
	return nil
}

// daemonSetFor builds the agent DaemonSet. The one container is privileged
// and shares the host's PID namespace: the agent writes scheduler sysctls
// under /proc/sys (the scheduler's are not namespaced, so the container's
// /proc/sys reaches the host's when privileged) and debugfs files under
// /sys/kernel/debug, creates cgroups in the host's hierarchy and moves its
// workload processes into them by PID. The host's /sys/fs/cgroup and
// /sys/kernel/debug are mounted at the same paths, so that the agent's own
// mount table shows them where the host has them and its root stays "/";
// the journal's state directory is at the same path as on the host.
func (r *SchedExperimentReconciler) daemonSetFor(s *scope) (*appsv1.DaemonSet, error) {
	cfg := r.Config
	selector := map[string]string{
		names.AppNameLabel:       names.AgentAppName,
		v1alpha1.ExperimentLabel: names.LabelValue(s.exp.Name),
	}
	labels := map[string]string{
		names.ManagedByLabel:  names.ManagedByValue,
		names.GenerationLabel: fmt.Sprint(s.exp.Generation),
	}
	for k, v := range selector {
		labels[k] = v
	}
	spec := r.agentPodSpec(s)
	spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: nodeTerms(s.chosen)},
	}}
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}
	raw, err := json.Marshal(tmpl)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(raw)
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:        names.DaemonSet(s.exp.Name),
			Namespace:   cfg.Namespace,
			Labels:      labels,
			Annotations: map[string]string{templateHashAnnotation: hex.EncodeToString(sum[:8])},
		},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: tmpl,
			// OnDelete: a new template (a new manager's agent image) reaches
			// only pods that start after it. A rolling update would kill every
			// agent mid-window and abort every running experiment on upgrade.
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType},
		},
	}
	if err := controllerutil.SetControllerReference(s.exp, ds, r.Client.Scheme()); err != nil {
		return nil, err
	}
	return ds, nil
}

// agentPodSpec is the pod of an agent: one privileged container sharing the
// host's PID namespace, with the host's cgroup, debugfs and state directories
// (see daemonSetFor). extraArgs follow the agent's own.
func (r *SchedExperimentReconciler) agentPodSpec(s *scope, extraArgs ...string) corev1.PodSpec {
	cfg := r.Config
	// The workload runs in cgroups of its own, outside the container's:
	// the request is the agent's alone.
	resources := corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("10m"),
		corev1.ResourceMemory: resource.MustParse("64Mi"),
	}}
	if cfg.AgentResources != nil {
		resources = *cfg.AgentResources.DeepCopy()
	}
	var pullSecrets []corev1.LocalObjectReference
	for _, n := range cfg.AgentImagePullSecrets {
		pullSecrets = append(pullSecrets, corev1.LocalObjectReference{Name: n})
	}
	hostPathDir := corev1.HostPathDirectory
	stateType := corev1.HostPathDirectoryOrCreate
	propagation := corev1.MountPropagationHostToContainer
	return corev1.PodSpec{
		ServiceAccountName:            cfg.AgentServiceAccount,
		HostPID:                       true,
		PriorityClassName:             cfg.AgentPriorityClass,
		Tolerations:                   cfg.AgentTolerations,
		NodeSelector:                  cfg.AgentNodeSelector,
		ImagePullSecrets:              pullSecrets,
		TerminationGracePeriodSeconds: ptr.To[int64](120),
		AutomountServiceAccountToken:  ptr.To(true),
		Containers: []corev1.Container{{
			Name:            "agent",
			Image:           cfg.AgentImage,
			ImagePullPolicy: cfg.AgentImagePullPolicy,
			Args: append([]string{"agent",
				"--experiment", s.exp.Name,
				"--state-dir", cfg.StateDir,
			}, extraArgs...),
			Env: []corev1.EnvVar{
				{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
				{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
			},
			Resources: resources,
			SecurityContext: &corev1.SecurityContext{
				Privileged:             ptr.To(true),
				RunAsUser:              ptr.To[int64](0),
				ReadOnlyRootFilesystem: ptr.To(true),
			},
			VolumeMounts: []corev1.VolumeMount{
				{Name: "cgroup", MountPath: "/sys/fs/cgroup"},
				{Name: "debugfs", MountPath: "/sys/kernel/debug", MountPropagation: &propagation},
				{Name: "state", MountPath: cfg.StateDir},
				{Name: "tmp", MountPath: "/tmp"},
			},
		}},
		Volumes: []corev1.Volume{
			{Name: "cgroup", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/sys/fs/cgroup", Type: &hostPathDir}}},
			{Name: "debugfs", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/sys/kernel/debug", Type: &hostPathDir}}},
			{Name: "state", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: cfg.StateDir, Type: &stateType}}},
			{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		},
	}
}

// nodeTerms pins pods to the nodes: a metadata.name field selector takes one
// value, so one term per node (terms are ORed).
func nodeTerms(nodes []string) []corev1.NodeSelectorTerm {
	terms := make([]corev1.NodeSelectorTerm, 0, len(nodes))
	for _, n := range nodes {
		terms = append(terms, corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{
			Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{n},
		}}})
	}
	return terms
}
