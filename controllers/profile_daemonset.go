package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/schedlab/schedlab/agent/profile"
	"github.com/schedlab/schedlab/api/names"
	"github.com/schedlab/schedlab/api/v1alpha1"
)

// ProfileDaemonSetName is the one DaemonSet of profile agents.
const ProfileDaemonSetName = "schedlab-profile-agent"

// ensureProfileDaemonSet keeps the profile-agent DaemonSet on every node
// that a profile selects or whose agent still holds a profile's state (it
// has an entry in a status: it must stay to restore the node), and deletes
// it when there is none.
func (r *SchedProfileReconciler) ensureProfileDaemonSet(ctx context.Context, log logr.Logger) error {
	var profiles v1alpha1.SchedProfileList
	if err := r.Client.List(ctx, &profiles); err != nil {
		return err
	}
	var nodes corev1.NodeList
	if err := r.Client.List(ctx, &nodes); err != nil {
		return err
	}
	want := map[string]bool{}
	for i := range profiles.Items {
		p := &profiles.Items[i]
		for j := range nodes.Items {
			if p.DeletionTimestamp.IsZero() && profile.Selects(p, nodes.Items[j].Labels) {
				want[nodes.Items[j].Name] = true
			}
		}
		for _, e := range p.Status.Nodes {
			want[e.Node] = true
		}
	}
	list := make([]string, 0, len(want))
	for n := range want {
		list = append(list, n)
	}
	sort.Strings(list)

	cur := &appsv1.DaemonSet{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: r.Config.Namespace, Name: ProfileDaemonSetName}, cur)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	exists := err == nil
	if len(list) == 0 {
		if exists {
			if err := r.Client.Delete(ctx, cur); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting DaemonSet %s: %w", ProfileDaemonSetName, err)
			}
			log.Info("Deleted the profile agent DaemonSet: no node is under a profile")
		}
		return nil
	}
	ds, err := r.profileDaemonSet(list)
	if err != nil {
		return err
	}
	if !exists {
		if err := r.Client.Create(ctx, ds); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating DaemonSet %s: %w", ds.Name, err)
		}
		log.Info("Created the profile agent DaemonSet", "nodes", len(list))
		return nil
	}
	if cur.Annotations[templateHashAnnotation] == ds.Annotations[templateHashAnnotation] {
		return nil
	}
	upd := cur.DeepCopy()
	upd.Labels, upd.Annotations, upd.Spec.Template = ds.Labels, ds.Annotations, ds.Spec.Template
	if err := r.Client.Update(ctx, upd); err != nil {
		return fmt.Errorf("updating DaemonSet %s: %w", ds.Name, err)
	}
	log.Info("Updated the profile agent DaemonSet", "nodes", len(list))
	return nil
}

// profileDaemonSet is the profile agents' DaemonSet over nodes: the same
// image, privileges and mounts as an experiment's agent (see daemonSetFor),
// in profile mode, with no workload to run.
func (r *SchedProfileReconciler) profileDaemonSet(nodes []string) (*appsv1.DaemonSet, error) {
	cfg := r.Config
	selector := map[string]string{names.AppNameLabel: names.AgentAppName, "schedlab.io/component": "profile-agent"}
	labels := map[string]string{names.ManagedByLabel: names.ManagedByValue}
	for k, v := range selector {
		labels[k] = v
	}
	hostPathDir := corev1.HostPathDirectory
	stateType := corev1.HostPathDirectoryOrCreate
	propagation := corev1.MountPropagationHostToContainer
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			ServiceAccountName:            cfg.AgentServiceAccount,
			HostPID:                       true,
			PriorityClassName:             cfg.AgentPriorityClass,
			Tolerations:                   cfg.AgentTolerations,
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			AutomountServiceAccountToken:  ptr.To(true),
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: nodeTerms(nodes)},
			}},
			Containers: []corev1.Container{{
				Name:            "agent",
				Image:           cfg.AgentImage,
				ImagePullPolicy: cfg.AgentImagePullPolicy,
				Args:            []string{"agent", "--profiles", "--namespace", cfg.Namespace, "--state-dir", cfg.StateDir},
				Env: []corev1.EnvVar{
					{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
				},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse("5m"),
					corev1.ResourceMemory: resource.MustParse("32Mi"),
				}},
				SecurityContext: &corev1.SecurityContext{
					Privileged:             ptr.To(true),
					RunAsUser:              ptr.To[int64](0),
					ReadOnlyRootFilesystem: ptr.To(true),
				},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "cgroup", MountPath: "/sys/fs/cgroup"},
					{Name: "debugfs", MountPath: "/sys/kernel/debug", MountPropagation: &propagation},
					{Name: "state", MountPath: cfg.StateDir},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: "cgroup", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/sys/fs/cgroup", Type: &hostPathDir}}},
				{Name: "debugfs", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/sys/kernel/debug", Type: &hostPathDir}}},
				{Name: "state", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: cfg.StateDir, Type: &stateType}}},
			},
		},
	}
	raw, err := json.Marshal(tmpl)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(raw)
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: ProfileDaemonSetName, Namespace: cfg.Namespace, Labels: labels,
			Annotations: map[string]string{templateHashAnnotation: hex.EncodeToString(sum[:8])},
		},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: tmpl,
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{
				Type:          appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr.To(intOrStringPercent(100))},
			},
		},
	}, nil
}

func intOrStringPercent(p int) intstr.IntOrString { return intstr.FromString(fmt.Sprintf("%d%%", p)) }
