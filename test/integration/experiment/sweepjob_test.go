package experiment_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedlab/schedlab/api/names"
	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/controllers"
	"github.com/schedlab/schedlab/internal/experiment"
)

// jobRunner plays the kubelets and the Job controller for a sweep's Indexed
// Job (there is no kubelet here): for every completion index it runs the
// steps of the pod's command, `schedlab simulate -f <input> --shard
// job/<n> --to-configmap <ns>/<job> [...]`, in-process (the manifest
// loaded from the mounted input ConfigMap, the shard simulated, the result
// written into the shard's ConfigMap), then marks the Job complete.
type jobRunner struct {
	// gate holds the pods until it is closed (nil: they run at once).
	gate <-chan struct{}
	// fail marks the Job failed instead of running it.
	fail bool

	mu sync.Mutex
	// seen are the UIDs of the Jobs that appeared, by Job name.
	seen map[string][]string
	// shards run, in all.
	shards int
}

func (j *jobRunner) run(ctx context.Context, k *kubelet, job *batchv1.Job) {
	j.mu.Lock()
	if j.seen == nil {
		j.seen = map[string][]string{}
	}
	j.seen[job.Name] = append(j.seen[job.Name], string(job.UID))
	j.mu.Unlock()
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		if j.gate != nil {
			select {
			case <-j.gate:
			case <-ctx.Done():
				return
			}
		}
		if err := j.runJob(ctx, k.h, job); err != nil && ctx.Err() == nil {
			k.h.t.Errorf("running Job %s: %v", job.Name, err)
		}
	}()
}

func (j *jobRunner) jobsSeen(name string) []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.seen[name])
}

func (j *jobRunner) runJob(ctx context.Context, h *harness, job *batchv1.Job) error {
	pod := job.Spec.Template.Spec
	c := pod.Containers[0]
	if len(c.Args) == 0 || c.Args[0] != "simulate" {
		return fmt.Errorf("the pod runs %q, not schedlab simulate", c.Args)
	}
	start := metav1.Now()
	if j.fail {
		return j.finish(ctx, job, start, false)
	}
	// The mounted input ConfigMap, as files.
	dir := h.t.TempDir()
	mount, cmName := "", ""
	for _, m := range c.VolumeMounts {
		for _, v := range pod.Volumes {
			if v.Name == m.Name && v.ConfigMap != nil {
				mount, cmName = m.MountPath, v.ConfigMap.Name
			}
		}
	}
	in := &corev1.ConfigMap{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: cmName}, in); err != nil {
		if apierrors.IsNotFound(err) {
			return nil // the Job was deleted (its experiment gone) before its pods ran
		}
		return fmt.Errorf("the input ConfigMap: %w", err)
	}
	for k, v := range in.Data {
		if err := os.WriteFile(filepath.Join(dir, k), []byte(v), 0o644); err != nil {
			return err
		}
	}
	local := func(p string) string { return filepath.Join(dir, strings.TrimPrefix(p, mount+"/")) }

	fs := pflag.NewFlagSet("simulate", pflag.ContinueOnError)
	file := fs.StringP("filename", "f", "", "")
	shard := fs.String("shard", "", "")
	to := fs.String("to-configmap", "", "")
	cal := fs.String("calibration", "", "")
	dur := fs.Duration("duration", 0, "")
	if err := fs.Parse(c.Args[1:]); err != nil {
		return err
	}
	n, err := strconv.Atoi(strings.TrimPrefix(*shard, "job/"))
	if err != nil || !strings.HasPrefix(*shard, "job/") || n != int(ptr.Deref(job.Spec.Completions, 0)) {
		return fmt.Errorf("--shard %q with %d completions", *shard, ptr.Deref(job.Spec.Completions, 0))
	}
	ns, prefix, _ := strings.Cut(*to, "/")
	for i := 0; i < n; i++ { // JOB_COMPLETION_INDEX=i
		exp, err := experiment.Load(local(*file))
		if err != nil {
			return err
		}
		opts := experiment.PredictOptions{Duration: *dur}
		if *cal != "" {
			cf, err := experiment.LoadCalibrationFile(local(*cal))
			if err != nil {
				return err
			}
			opts.Calibration = experiment.CalibrationMap(cf.Shapes)
		}
		sh, err := experiment.RunSweep(ctx, &exp.Spec, exp.Spec.Simulation.Nodes, experiment.SweepOptions{PredictOptions: opts, Shard: i, Shards: n})
		if err != nil {
			return err
		}
		sh.Experiment = exp.Name
		if err := controllers.WriteSweepShard(ctx, k8s, ns, names.SweepShard(prefix, i), sh); err != nil {
			return err
		}
		j.mu.Lock()
		j.shards++
		j.mu.Unlock()
	}
	return j.finish(ctx, job, start, true)
}

// finish writes the Job's status as the Job controller does once every
// index has succeeded (or the Job failed).
func (j *jobRunner) finish(ctx context.Context, job *batchv1.Job, start metav1.Time, ok bool) error {
	n := ptr.Deref(job.Spec.Completions, 0)
	now := metav1.Now()
	cur := &batchv1.Job{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(job), cur); err != nil {
		return client.IgnoreNotFound(err)
	}
	if cur.UID != job.UID {
		return nil
	}
	cur.Status.StartTime = &start
	if ok {
		cur.Status.Succeeded = n
		cur.Status.CompletedIndexes = fmt.Sprintf("0-%d", n-1)
		if n == 1 {
			cur.Status.CompletedIndexes = "0"
		}
		cur.Status.CompletionTime = &now
		cur.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now, LastProbeTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now, LastProbeTime: now},
		}
	} else {
		cur.Status.Failed = 1
		cur.Status.FailedIndexes = ptr.To("0")
		cur.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "FailedIndexes", Message: "Job has failed indexes", LastTransitionTime: now, LastProbeTime: now},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "FailedIndexes", Message: "Job has failed indexes", LastTransitionTime: now, LastProbeTime: now},
		}
	}
	if err := k8s.Status().Update(ctx, cur); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("marking the Job finished: %w", err)
	}
	return nil
}

// sweepJobSpec is a Simulate experiment with a small sweep: 1 shape × 2
// variants × 3 points = 6 simulator jobs.
func (h *harness) sweepJobSpec() v1alpha1.SchedExperimentSpec {
	spec := h.experimentSpec()
	spec.Mode = v1alpha1.ModeSimulate
	spec.NodeSelector = nil
	spec.Objectives = nil
	spec.Simulation = &v1alpha1.Simulation{Seed: 1, Nodes: []v1alpha1.NodeShape{{CPUs: 2, Scheduler: v1alpha1.SchedulerEEVDF, Count: ptr.To[int32](10)}}}
	spec.Sweep = &v1alpha1.Sweep{
		Parameters: []v1alpha1.SweepParameter{{Target: v1alpha1.SweepReplicas, Group: "probe", Range: &v1alpha1.SweepRange{From: 1, To: 3, Step: 1}}},
		Answer:     v1alpha1.SweepLargest,
	}
	spec.Constraints = []v1alpha1.Constraint{{Metric: "wakeupLatencyUs.p99", Group: "probe", Max: ptr.To(1e9)}}
	return spec
}

func sweepJobConfig(c *controllers.Config) {
	c.SweepJobMinJobs = 4
	c.SweepJobParallelism = 3
	c.SweepJobArgs = []string{"--duration", "500ms"}
}

// TestSweepAsIndexedJob: a sweep at or above the manager's threshold runs as
// an Indexed Job (the manager's image, `simulate --shard job/n`, parallelism
// from the manager's flag), its shards written into ConfigMaps the
// experiment owns; the manager is restarted while the Job runs and the new
// one neither recreates the Job nor simulates the sweep itself, merges the
// shards once the Job completes (the same answer the manager's own pool
// gives), and deletes the Job and its ConfigMaps.
func TestSweepAsIndexedJob(t *testing.T) {
	gate := make(chan struct{})
	jr := &jobRunner{gate: gate}
	h := newHarness(t, harnessOptions{Jobs: jr, Config: sweepJobConfig})
	spec := h.sweepJobSpec()
	name := h.createExperiment("exp", spec)
	jobName := names.SweepJob(name)
	h.waitCondition(name, v1alpha1.ConditionRunning, metav1.ConditionTrue, "Simulating", 30*time.Second)
	job := &batchv1.Job{}
	h.eventually(10*time.Second, "the Job", func() (bool, string) {
		err := k8s.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: jobName}, job)
		return err == nil, fmt.Sprint(err)
	})
	c := job.Spec.Template.Spec.Containers[0]
	if ptr.Deref(job.Spec.CompletionMode, "") != batchv1.IndexedCompletion || ptr.Deref(job.Spec.Completions, 0) != 3 ||
		ptr.Deref(job.Spec.Parallelism, 0) != 3 || c.Image != "schedlab:test" ||
		!slices.Contains(c.Args, "job/3") || job.Spec.Template.Spec.ServiceAccountName != "schedlab-simulator" {
		t.Errorf("Job: mode %v completions %v parallelism %v image %s args %q account %s; want Indexed, 3, 3, the manager's image, --shard job/3, schedlab-simulator",
			ptr.Deref(job.Spec.CompletionMode, ""), ptr.Deref(job.Spec.Completions, 0), ptr.Deref(job.Spec.Parallelism, 0), c.Image, c.Args, job.Spec.Template.Spec.ServiceAccountName)
	}
	if c.SecurityContext == nil || c.SecurityContext.Privileged != nil || job.Spec.Template.Spec.HostPID {
		t.Errorf("the shard pods are not privileged and do not share the host's PIDs: %+v", c.SecurityContext)
	}
	var cms corev1.ConfigMapList
	if err := k8s.List(h.ctx, &cms, client.InNamespace(h.ns), client.MatchingLabels{names.SweepOfLabel: name}); err != nil {
		t.Fatal(err)
	}
	if len(cms.Items) != 4 {
		t.Errorf("%d ConfigMaps, want the input and 3 shards", len(cms.Items))
	}
	for _, o := range append([]client.Object{job}, &cms.Items[0]) {
		if !metav1.IsControlledBy(o, h.get(name)) {
			t.Errorf("%s is not owned by the experiment: %+v", o.GetName(), o.GetOwnerReferences())
		}
	}

	// The manager goes away mid-Job; a new one takes over.
	h.restartManager()
	h.waitCondition(name, v1alpha1.ConditionRunning, metav1.ConditionTrue, "Simulating", 30*time.Second)
	close(gate)
	e := h.waitCondition(name, v1alpha1.ConditionCompleted, metav1.ConditionTrue, v1alpha1.ReasonSimulated, 2*time.Minute)
	if got := jr.jobsSeen(jobName); len(got) != 1 {
		t.Errorf("Jobs created: %d (%v), want 1 across the restart", len(got), got)
	}
	jr.mu.Lock()
	shards := jr.shards
	jr.mu.Unlock()
	if shards != 3 {
		t.Errorf("%d shards run, want 3", shards)
	}
	// The same answer as the manager's own simulation of the sweep.
	sp := spec.DeepCopy()
	sp.Default()
	want, err := experiment.Plan(h.ctx, sp, sp.Simulation.Nodes, experiment.SweepOptions{PredictOptions: experiment.PredictOptions{Duration: 500 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(e.Status.Sweep, want) {
		t.Errorf("status.sweep from the Job's shards differs from the pool's:\n got %+v\nwant %+v", e.Status.Sweep, want)
	}
	if len(e.Status.Results) == 0 {
		t.Errorf("no result rows")
	}
	h.eventually(30*time.Second, "the Job and its ConfigMaps deleted", func() (bool, string) {
		err := k8s.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: jobName}, &batchv1.Job{})
		var cms corev1.ConfigMapList
		_ = k8s.List(h.ctx, &cms, client.InNamespace(h.ns), client.MatchingLabels{names.SweepOfLabel: name})
		return apierrors.IsNotFound(err) && len(cms.Items) == 0, fmt.Sprintf("job: %v, %d ConfigMaps", err, len(cms.Items))
	})
}

// TestSweepJobFails: a failed Job fails the experiment with its reason and
// its objects are cleaned up; below the threshold the pool simulates.
func TestSweepJobFails(t *testing.T) {
	jr := &jobRunner{fail: true}
	h := newHarness(t, harnessOptions{Jobs: jr, Config: sweepJobConfig})
	name := h.createExperiment("exp", h.sweepJobSpec())
	e := h.waitCondition(name, v1alpha1.ConditionFailed, metav1.ConditionTrue, "SimulationFailed", time.Minute)
	if c := meta.FindStatusCondition(e.Status.Conditions, v1alpha1.ConditionFailed); !strings.Contains(c.Message, "failed") || !strings.Contains(c.Message, names.SweepJob(name)) {
		t.Errorf("Failed: %q, want the Job named", c.Message)
	}
	h.eventually(30*time.Second, "the Job deleted", func() (bool, string) {
		err := k8s.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: names.SweepJob(name)}, &batchv1.Job{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})

	small := h.sweepJobSpec()
	small.Variants = small.Variants[:1] // 3 jobs, below 4
	name = h.createExperiment("small", small)
	h.waitCondition(name, v1alpha1.ConditionCompleted, metav1.ConditionTrue, v1alpha1.ReasonSimulated, time.Minute)
	if got := jr.jobsSeen(names.SweepJob(name)); len(got) != 0 {
		t.Errorf("a sweep below the threshold ran as a Job")
	}
}
