package controllers

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/schedlab/schedlab/api/names"
	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/experiment"
)

// +kubebuilder:rbac:groups=batch,namespace=schedlab-system,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=core,namespace=schedlab-system,resources=configmaps,verbs=create;update;patch;delete

// Keys of a sweep Job's ConfigMaps.
const (
	// SweepInputKey holds the manifest the shard pods simulate (the
	// experiment with spec.simulation.nodes set to the shapes chosen).
	SweepInputKey = "experiment.yaml"
	// SweepCalibrationKey holds the calibration file of those shapes,
	// when one is stored.
	SweepCalibrationKey = "calibration.yaml"
	// SweepShardKey holds a shard's result: the JSON of
	// `schedlab simulate --shard`, gzipped (a ConfigMap holds at most 1 MiB).
	SweepShardKey = "shard.json.gz"
	// sweepInputDir is where the shard pods mount the input ConfigMap.
	sweepInputDir = "/etc/schedlab/sweep"
)

// sweepJobPlan is how an experiment's sweep runs as an Indexed Job, if it does.
type sweepJobPlan struct {
	name        string
	shards      int // completions: one pod per shard
	parallelism int
}

// sweepJobFor says whether the sweep runs as an Indexed Job rather than in
// the manager's pool: it does when it has at least SweepJobMinJobs simulator
// jobs (shapes × variants × points) and its shapes fit in one manifest's
// spec.simulation.nodes.
func (r *SchedExperimentReconciler) sweepJobFor(s *scope, shapes []v1alpha1.NodeShape) (sweepJobPlan, bool) {
	spec := &s.exp.Spec
	if spec.Sweep == nil || r.Config.SweepJobMinJobs <= 0 || len(shapes) == 0 || len(shapes) > 8 {
		return sweepJobPlan{}, false
	}
	jobs := len(shapes) * len(spec.Variants) * len(experiment.SweepGrid(experiment.SweepAxes(spec.Sweep)))
	if jobs < r.Config.SweepJobMinJobs {
		return sweepJobPlan{}, false
	}
	par := r.Config.SweepJobParallelism
	if sim := spec.Simulation; sim != nil && sim.Parallelism != nil {
		par = int(*sim.Parallelism)
	}
	par = max(par, 1)
	// A shard's gzipped JSON must fit a ConfigMap: at most
	// sweepJobsPerShard jobs each (about 0.5 KiB of JSON per job before
	// compression); at least one shard per pod running at once.
	shards := max(par, (jobs+sweepJobsPerShard-1)/sweepJobsPerShard)
	return sweepJobPlan{name: names.SweepJob(s.exp.Name), shards: min(shards, 1000), parallelism: min(par, shards)}, true
}

// sweepJobsPerShard bounds one shard's jobs so that its result fits a
// ConfigMap with room to spare.
const sweepJobsPerShard = 2000

// sweepByJob runs the sweep of a Simulate experiment as an Indexed Job:
// `schedlab simulate --shard $JOB_COMPLETION_INDEX/n` in the manager's
// image, each pod writing its shard into a ConfigMap the experiment owns;
// when the Job completes, the shards are merged. Everything it needs is in
// the API (the Job, its input and the shards, by name and generation), so a
// manager restarted mid-Job picks it up where it was. It returns the merged
// sweep once done; a message when the Job failed; neither while it runs.
func (r *SchedExperimentReconciler) sweepByJob(ctx context.Context, s *scope, plan sweepJobPlan, shapes []v1alpha1.NodeShape, cals []v1alpha1.ShapeCalibration) (*v1alpha1.SweepStatus, string, error) {
	ns := r.Config.Namespace
	gen := strconv.FormatInt(s.exp.Generation, 10)
	job := &batchv1.Job{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: plan.name}, job)
	switch {
	case apierrors.IsNotFound(err):
		job = nil
	case err != nil:
		return nil, "", fmt.Errorf("getting Job %s: %w", plan.name, err)
	case !metav1.IsControlledBy(job, s.exp) || job.Labels[names.GenerationLabel] != gen:
		// An earlier generation's (or experiment's) Job: cleanupSweepJobs
		// deletes it; its deletion brings us back.
		return nil, "", nil
	}
	if job == nil {
		if err := r.createSweepJob(ctx, s, plan, shapes, cals); err != nil {
			return nil, "", err
		}
		return nil, "", nil
	}
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobFailed:
			return nil, fmt.Sprintf("the sweep's Job %s/%s failed: %s: %s", ns, plan.name, c.Reason, c.Message), nil
		case batchv1.JobComplete:
			return r.mergeSweepJob(ctx, s, job)
		}
	}
	return nil, "", nil
}

// createSweepJob creates the input ConfigMap, one empty ConfigMap per shard
// (so the pods need only patch them) and the Job, all controlled by the
// experiment and labelled with its generation.
func (r *SchedExperimentReconciler) createSweepJob(ctx context.Context, s *scope, plan sweepJobPlan, shapes []v1alpha1.NodeShape, cals []v1alpha1.ShapeCalibration) error {
	cfg := r.Config
	labels := map[string]string{
		names.ManagedByLabel:  names.ManagedByValue,
		names.AppNameLabel:    names.SimulatorAppName,
		names.SweepOfLabel:    names.LabelValue(s.exp.Name),
		names.GenerationLabel: strconv.FormatInt(s.exp.Generation, 10),
	}
	spec := s.exp.Spec.DeepCopy()
	spec.Default()
	if spec.Simulation == nil {
		spec.Simulation = &v1alpha1.Simulation{}
	}
	spec.Simulation.Nodes = shapes
	manifest := v1alpha1.SchedExperiment{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "SchedExperiment"},
		ObjectMeta: metav1.ObjectMeta{Name: s.exp.Name},
		Spec:       *spec,
	}
	raw, err := json.Marshal(manifest)
	if err != nil {
		return err
	}
	in := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: names.SweepInput(plan.name), Namespace: cfg.Namespace, Labels: labels},
		Data:       map[string]string{SweepInputKey: string(raw)},
	}
	args := []string{"simulate", "-f", sweepInputDir + "/" + SweepInputKey,
		"--shard", fmt.Sprintf("job/%d", plan.shards),
		"--to-configmap", cfg.Namespace + "/" + plan.name}
	if len(cals) > 0 {
		rawCal, err := json.Marshal(experiment.CalibrationFile{Shapes: cals})
		if err != nil {
			return err
		}
		in.Data[SweepCalibrationKey] = string(rawCal)
		args = append(args, "--calibration", sweepInputDir+"/"+SweepCalibrationKey)
	}
	args = append(args, cfg.SweepJobArgs...)
	objs := []client.Object{in}
	for i := 0; i < plan.shards; i++ {
		objs = append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: names.SweepShard(plan.name, i), Namespace: cfg.Namespace, Labels: labels}})
	}
	var pullSecrets []corev1.LocalObjectReference
	for _, n := range cfg.AgentImagePullSecrets {
		pullSecrets = append(pullSecrets, corev1.LocalObjectReference{Name: n})
	}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: plan.name, Namespace: cfg.Namespace, Labels: labels},
		Spec: batchv1.JobSpec{
			CompletionMode: ptr.To(batchv1.IndexedCompletion),
			Completions:    ptr.To(int32(plan.shards)),
			Parallelism:    ptr.To(int32(plan.parallelism)),
			// A shard is deterministic: a failed pod is a node lost or a
			// pod evicted, worth two more tries per shard.
			BackoffLimitPerIndex:  ptr.To[int32](2),
			ActiveDeadlineSeconds: ptr.To(int64(max(cfg.SimulationTimeout.Seconds(), 60))),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: cfg.SimulatorServiceAccount,
					RestartPolicy:      corev1.RestartPolicyNever,
					ImagePullSecrets:   pullSecrets,
					SecurityContext:    &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532)},
					Containers: []corev1.Container{{
						Name:            "simulate",
						Image:           cfg.AgentImage,
						ImagePullPolicy: cfg.AgentImagePullPolicy,
						Args:            args,
						Env: []corev1.EnvVar{
							{Name: "GOMAXPROCS", Value: "1"},
						},
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU:    resource.MustParse("1"),
							corev1.ResourceMemory: resource.MustParse("256Mi"),
						}},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							ReadOnlyRootFilesystem:   ptr.To(true),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
						VolumeMounts: []corev1.VolumeMount{{Name: "input", MountPath: sweepInputDir, ReadOnly: true}},
					}},
					Volumes: []corev1.Volume{{Name: "input", VolumeSource: corev1.VolumeSource{
						ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: in.Name}},
					}}},
				},
			},
		},
	}
	objs = append(objs, job) // last: its pods find their ConfigMaps
	for _, o := range objs {
		if err := controllerutil.SetControllerReference(s.exp, o, r.Client.Scheme()); err != nil {
			return err
		}
		if err := r.Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s for the sweep's Job: %w", o.GetName(), err)
		}
	}
	s.log.Info("Created the sweep's Indexed Job", "job", plan.name, "shards", plan.shards, "parallelism", plan.parallelism)
	s.event(corev1.EventTypeNormal, "CreatedSweepJob", "Simulate",
		fmt.Sprintf("Created Indexed Job %s/%s: %d shards, %d at once", cfg.Namespace, plan.name, plan.shards, plan.parallelism))
	return nil
}

// mergeSweepJob reads the shards of a completed Job and merges them, with the
// spec and shapes of its input ConfigMap (what the pods simulated).
func (r *SchedExperimentReconciler) mergeSweepJob(ctx context.Context, s *scope, job *batchv1.Job) (*v1alpha1.SweepStatus, string, error) {
	ns := r.Config.Namespace
	in := &corev1.ConfigMap{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: names.SweepInput(job.Name)}, in); err != nil {
		return nil, "", fmt.Errorf("getting the sweep's input: %w", err)
	}
	var manifest v1alpha1.SchedExperiment
	if err := json.Unmarshal([]byte(in.Data[SweepInputKey]), &manifest); err != nil {
		return nil, fmt.Sprintf("the sweep's input ConfigMap %s/%s is not a manifest: %v", ns, in.Name, err), nil
	}
	n := int(ptr.Deref(job.Spec.Completions, 0))
	shards := make([]*experiment.SweepShard, 0, n)
	for i := 0; i < n; i++ {
		cm := &corev1.ConfigMap{}
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: names.SweepShard(job.Name, i)}, cm); err != nil {
			return nil, "", fmt.Errorf("getting shard %d of %d: %w", i, n, err)
		}
		sh, err := ReadSweepShard(cm)
		if err != nil {
			return nil, fmt.Sprintf("shard %d of %d of Job %s/%s: %v", i, n, ns, job.Name, err), nil
		}
		shards = append(shards, sh)
	}
	sw, err := experiment.MergeSweep(&manifest.Spec, manifest.Spec.Simulation.Nodes, shards)
	if err != nil {
		return nil, fmt.Sprintf("merging the %d shards of Job %s/%s: %v", n, ns, job.Name, err), nil
	}
	return sw, "", nil
}

// cleanupSweepJobs deletes the sweep Jobs and ConfigMaps of an experiment
// that are no longer needed: those of another generation or another
// experiment of the same name, and all of them once the experiment is
// finished (its results are in the status as read) or being deleted.
func (r *SchedExperimentReconciler) cleanupSweepJobs(ctx context.Context, s *scope) error {
	if r.Config.SweepJobMinJobs <= 0 {
		return nil
	}
	ns := r.Config.Namespace
	sel := client.MatchingLabels{names.SweepOfLabel: names.LabelValue(s.exp.Name), names.AppNameLabel: names.SimulatorAppName}
	var jobs batchv1.JobList
	if err := r.Client.List(ctx, &jobs, client.InNamespace(ns), sel); err != nil {
		return fmt.Errorf("listing sweep Jobs: %w", err)
	}
	var cms corev1.ConfigMapList
	if err := r.Client.List(ctx, &cms, client.InNamespace(ns), sel); err != nil {
		return fmt.Errorf("listing sweep ConfigMaps: %w", err)
	}
	done := isTerminal(s.exp) || !s.exp.DeletionTimestamp.IsZero()
	gen := strconv.FormatInt(s.exp.Generation, 10)
	var objs []client.Object
	for i := range jobs.Items {
		objs = append(objs, &jobs.Items[i])
	}
	for i := range cms.Items {
		objs = append(objs, &cms.Items[i])
	}
	sort.SliceStable(objs, func(i, j int) bool { return objs[i].GetName() < objs[j].GetName() })
	for _, o := range objs {
		if !done && metav1.IsControlledBy(o, s.exp) && o.GetLabels()[names.GenerationLabel] == gen {
			continue
		}
		if err := r.deleteObject(ctx, o); err != nil {
			return fmt.Errorf("deleting %s of the sweep's Job: %w", o.GetName(), err)
		}
	}
	return nil
}

// WriteSweepShard writes a shard's result into the ConfigMap the
// controller made for it (gzipped JSON under SweepShardKey). A shard pod of
// the sweep's Indexed Job calls it.
func WriteSweepShard(ctx context.Context, c client.Client, namespace, name string, sh *experiment.SweepShard) error {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(sh); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{"binaryData": map[string][]byte{SweepShardKey: buf.Bytes()}})
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := c.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("writing shard %d/%d into ConfigMap %s/%s (%d bytes gzipped): %w", sh.Shard, sh.Shards, namespace, name, buf.Len(), err)
	}
	return nil
}

// ReadSweepShard reads what WriteSweepShard wrote.
func ReadSweepShard(cm *corev1.ConfigMap) (*experiment.SweepShard, error) {
	raw, ok := cm.BinaryData[SweepShardKey]
	if !ok {
		return nil, fmt.Errorf("ConfigMap %s has no %s: the shard's pod did not write it", cm.Name, SweepShardKey)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	var sh experiment.SweepShard
	if err := json.Unmarshal(data, &sh); err != nil {
		return nil, err
	}
	return &sh, nil
}
