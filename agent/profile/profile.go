// Package profile is the profile mode of the node agent: a long-running loop
// on one node that finds the SchedProfile winning on the node (selector,
// then priority, then name), keeps its knobs on the node through
// host.ProfileKeeper (journal before write, drift repair, restore), pauses
// while an experiment holds the node's Lease, and reports the node's entry
// in the profile's status.nodes by server-side apply, one field manager per
// node, so that agents never overwrite each other or the controller.
//
// It imports the API and internal/nodeagent/host; start reading at Agent.Run.
package profile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedlab/schedlab/api/names"
	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/nodeagent/host"
)

// The profile agent's RBAC: it reads profiles, its Node and the node Leases,
// writes its own entry of a profile's status and Events about drift.
// +kubebuilder:rbac:groups=schedlab.io,resources=schedprofiles,verbs=get;list;watch
// +kubebuilder:rbac:groups=schedlab.io,resources=schedprofiles/status,verbs=get;patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// FieldManager is the field manager of node's entry in a profile's status.
func FieldManager(node string) string { return "schedlab-agent-" + names.Shorten(node, 100) }

// Options configure a profile agent.
type Options struct {
	// Node is this node's name.
	Node string
	// Namespace is the operator's namespace, where the node Leases live.
	Namespace string
	// Keeper touches the node.
	Keeper *host.ProfileKeeper
	// Interval between two re-reads of the knobs (default 5s). The knob
	// files are also watched with inotify, which sees writes through the
	// same mount only (see fileWatch), so this period bounds how long drift
	// lasts.
	Interval time.Duration
	// StatusRefresh is the longest time between two status writes when
	// nothing changed (default 1m); the entry's lastCheck says when.
	StatusRefresh time.Duration
	// Clock, default the real clock.
	Clock clock.WithTicker
	Log   logr.Logger
}

// Agent keeps the winning profile on one node.
type Agent struct {
	opts   Options
	cache  cache.Cache
	client client.Client
	wake   chan struct{}

	repairs   map[string]int64 // profile → drift repairs on this node
	lastDrift map[string]*metav1.Time
	written   map[string]string // profile → last entry written (without lastCheck)
	writtenAt map[string]time.Time
	paused    bool
}

// New creates a profile agent whose cache holds every profile, its Node and
// the Leases of the operator's namespace.
func New(cfg *rest.Config, scheme *runtime.Scheme, opts Options) (*Agent, error) {
	if opts.Node == "" || opts.Namespace == "" || opts.Keeper == nil {
		return nil, errors.New("profile agent: node, namespace and keeper are required")
	}
	if opts.Interval <= 0 {
		opts.Interval = 5 * time.Second
	}
	if opts.StatusRefresh <= 0 {
		opts.StatusRefresh = time.Minute
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	c, err := cache.New(cfg, cache.Options{
		Scheme: scheme,
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Node{}:           {Field: fields.OneTermEqualSelector("metadata.name", opts.Node)},
			&coordinationv1.Lease{}:  {Namespaces: map[string]cache.Config{opts.Namespace: {}}, Field: fields.OneTermEqualSelector("metadata.name", names.Lease(opts.Node))},
			&v1alpha1.SchedProfile{}: {},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("profile agent cache: %w", err)
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme, Cache: &client.CacheOptions{Reader: c}})
	if err != nil {
		return nil, fmt.Errorf("profile agent client: %w", err)
	}
	return &Agent{opts: opts, cache: c, client: cl, wake: make(chan struct{}, 1),
		repairs: map[string]int64{}, lastDrift: map[string]*metav1.Time{},
		written: map[string]string{}, writtenAt: map[string]time.Time{}}, nil
}

func (a *Agent) poke() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// Run keeps the node until ctx is done. It first returns the node to the
// committed state (a predecessor killed mid-transition), then passes on
// every change of a profile, the Node or its Lease, and every Interval.
// Stopping leaves the node as it is: the next agent adopts it.
func (a *Agent) Run(ctx context.Context) error {
	log := a.opts.Log.WithValues("node", a.opts.Node)
	st, err := a.opts.Keeper.Recover(2 * time.Minute)
	if err != nil {
		return fmt.Errorf("recovering the profile journal: %w", err)
	}
	if st.Profile != "" {
		log.Info("Adopted the node's profile state", "profile", st.Profile, "generation", st.Generation, "knobs", len(st.Values))
	}
	cacheCtx, stopCache := context.WithCancel(context.WithoutCancel(ctx))
	defer stopCache()
	handler := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { a.poke() },
		UpdateFunc: func(any, any) { a.poke() },
		DeleteFunc: func(any) { a.poke() },
	}
	for _, obj := range []client.Object{&v1alpha1.SchedProfile{}, &corev1.Node{}, &coordinationv1.Lease{}} {
		inf, err := a.cache.GetInformer(cacheCtx, obj)
		if err != nil {
			return fmt.Errorf("profile agent informer: %w", err)
		}
		if _, err := inf.AddEventHandler(handler); err != nil {
			return fmt.Errorf("profile agent informer: %w", err)
		}
	}
	go func() { _ = a.cache.Start(cacheCtx) }()
	if !a.cache.WaitForCacheSync(ctx) {
		return ctx.Err()
	}
	a.loadCounters(ctx)
	fw, err := newFileWatch()
	if err != nil {
		log.Error(err, "No file watch: drift is found by the periodic re-read only", "interval", a.opts.Interval)
	} else {
		go fw.run(ctx, a.poke)
	}
	ticker := a.opts.Clock.NewTicker(a.opts.Interval)
	defer ticker.Stop()
	for {
		if err := a.pass(ctx, log); err != nil && ctx.Err() == nil {
			log.Error(err, "Profile pass failed")
		}
		if fw != nil {
			files, err := a.opts.Keeper.WatchedFiles()
			if err == nil {
				err = fw.set(files)
			}
			if err != nil && ctx.Err() == nil {
				log.Error(err, "Watching the knob files; the periodic re-read still finds drift")
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-a.wake:
		case <-ticker.C():
		}
	}
}

// loadCounters starts the drift counters from what the status says, so a
// restarted agent keeps counting.
func (a *Agent) loadCounters(ctx context.Context) {
	var list v1alpha1.SchedProfileList
	if err := a.client.List(ctx, &list); err != nil {
		return
	}
	for i := range list.Items {
		for _, n := range list.Items[i].Status.Nodes {
			if n.Node == a.opts.Node {
				a.repairs[list.Items[i].Name] = n.DriftRepairs
				a.lastDrift[list.Items[i].Name] = n.LastDrift
			}
		}
	}
}

// Winner picks the profile that applies on a node with these labels: among
// the profiles that select it and are not being deleted, the highest
// priority, then the name that sorts first. tie names the profiles the
// winner tied with on priority.
func Winner(profiles []v1alpha1.SchedProfile, nodeLabels map[string]string) (winner *v1alpha1.SchedProfile, tie []string) {
	var cands []*v1alpha1.SchedProfile
	for i := range profiles {
		p := &profiles[i]
		if !p.DeletionTimestamp.IsZero() || !Selects(p, nodeLabels) {
			continue
		}
		cands = append(cands, p)
	}
	if len(cands) == 0 {
		return nil, nil
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].Spec.Priority != cands[j].Spec.Priority {
			return cands[i].Spec.Priority > cands[j].Spec.Priority
		}
		return cands[i].Name < cands[j].Name
	})
	for _, c := range cands[1:] {
		if c.Spec.Priority == cands[0].Spec.Priority {
			tie = append(tie, c.Name)
		}
	}
	return cands[0], tie
}

// Selects reports whether p's nodeSelector matches the labels. An empty or
// invalid selector selects nothing.
func Selects(p *v1alpha1.SchedProfile, nodeLabels map[string]string) bool {
	if len(p.Spec.NodeSelector.MatchLabels) == 0 && len(p.Spec.NodeSelector.MatchExpressions) == 0 {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(&p.Spec.NodeSelector)
	if err != nil {
		return false
	}
	return sel.Matches(labels.Set(nodeLabels))
}

// Desired is what the winning profile asks of node: its spec's knobs once
// the rollout lets the node have the current generation, else the knobs of
// the last generation rolled out everywhere, else nothing yet.
func Desired(p *v1alpha1.SchedProfile, node string) *host.DesiredProfile {
	if p == nil {
		return nil
	}
	if ro := p.Status.Rollout; ro != nil && ro.Generation == p.Generation && contains(ro.Nodes, node) {
		return &host.DesiredProfile{Profile: p.Name, Generation: p.Generation, Knobs: p.Spec.Knobs.DeepCopy()}
	}
	if p.Status.LastGoodKnobs != nil {
		return &host.DesiredProfile{Profile: p.Name, Generation: p.Status.LastGoodGeneration, Knobs: p.Status.LastGoodKnobs.DeepCopy()}
	}
	return nil
}

func contains(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// heldBy names the experiment holding the node's Lease, or "".
func (a *Agent) heldBy(ctx context.Context) string {
	var l coordinationv1.Lease
	if err := a.client.Get(ctx, types.NamespacedName{Namespace: a.opts.Namespace, Name: names.Lease(a.opts.Node)}, &l); err != nil {
		return ""
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		return ""
	}
	if exp, _, ok := names.SplitLeaseHolder(*l.Spec.HolderIdentity); ok {
		return exp
	}
	return *l.Spec.HolderIdentity
}

// pass is one look at the node: pick, keep, report.
func (a *Agent) pass(ctx context.Context, log logr.Logger) error {
	var node corev1.Node
	if err := a.client.Get(ctx, types.NamespacedName{Name: a.opts.Node}, &node); err != nil {
		return fmt.Errorf("reading Node %s: %w", a.opts.Node, err)
	}
	var list v1alpha1.SchedProfileList
	if err := a.client.List(ctx, &list); err != nil {
		return fmt.Errorf("listing SchedProfiles: %w", err)
	}
	winner, tie := Winner(list.Items, node.Labels)
	want := Desired(winner, a.opts.Node)

	var res *host.KeepResult
	if exp := a.heldBy(ctx); exp != "" {
		res = &host.KeepResult{Busy: fmt.Sprintf("experiment %s holds the node; the profile waits for it to end", exp)}
	} else {
		var err error
		if res, err = a.opts.Keeper.Keep(want); err != nil {
			if winner != nil {
				a.report(ctx, winner, &v1alpha1.ProfileNodeStatus{Node: a.opts.Node, Phase: v1alpha1.ProfileNodeFailed, Reason: err.Error()})
			}
			return err
		}
	}
	if (res.Busy != "") != a.paused {
		a.paused = res.Busy != ""
		if a.paused {
			log.Info("Paused: another run holds the node", "reason", res.Busy)
		} else {
			log.Info("Resumed: the node is free again")
		}
	}
	if res.Busy == "" {
		// The state read under the lock is the truth of what the node holds.
		if res.Changed {
			log.Info("Node moved to a new profile state", "profile", res.State.Profile, "generation", res.State.Generation, "knobs", res.State.Values)
		}
	}
	st := res.State
	if res.Busy != "" {
		var err error
		if st, err = host.ReadProfileState(a.opts.Keeper.StateDir); err != nil {
			return err
		}
	}
	now := metav1.NewTime(a.opts.Clock.Now())

	// Drift repairs count against the profile the node holds.
	if len(res.Repaired) > 0 && st.Profile != "" {
		a.repairs[st.Profile] += int64(len(res.Repaired))
		a.lastDrift[st.Profile] = &now
		for _, p := range list.Items {
			if p.Name == st.Profile {
				a.event(ctx, &p, corev1.EventTypeWarning, "DriftRepaired", driftMessage(a.opts.Node, res.Repaired))
			}
		}
	}

	for i := range list.Items {
		p := &list.Items[i]
		var e *v1alpha1.ProfileNodeStatus
		switch {
		case p.Name == st.Profile:
			e = &v1alpha1.ProfileNodeStatus{Node: a.opts.Node, Generation: st.Generation, Applied: st.Values, Original: res.Original}
			switch {
			case res.Busy != "":
				e.Phase, e.Reason = v1alpha1.ProfileNodePaused, res.Busy
			case winner != nil && winner.Name != p.Name:
				e.Phase, e.Reason = v1alpha1.ProfileNodeApplied, fmt.Sprintf("profile %s wins on this node and is not applied yet", winner.Name)
			case len(res.Repaired) > 0:
				e.Phase, e.Reason = v1alpha1.ProfileNodeDrifted, driftMessage(a.opts.Node, res.Repaired)
			default:
				e.Phase = v1alpha1.ProfileNodeApplied
				if res.Unsupported != "" && winner != nil && winner.Name == p.Name {
					e.Phase, e.Reason = v1alpha1.ProfileNodeUnsupported, "generation "+fmt.Sprint(want.Generation)+" cannot apply: "+res.Unsupported
				}
			}
			if res.Busy == "" && len(res.Original) == 0 {
				e.Original = nil
			}
		case winner != nil && p.Name == winner.Name:
			e = &v1alpha1.ProfileNodeStatus{Node: a.opts.Node, Phase: v1alpha1.ProfileNodePending, Reason: "waiting for this node's turn in the rollout"}
			switch {
			case res.Busy != "":
				e.Phase, e.Reason = v1alpha1.ProfileNodePaused, res.Busy
			case res.Unsupported != "":
				e.Phase, e.Reason = v1alpha1.ProfileNodeUnsupported, res.Unsupported
			case p.Status.Rollout != nil && p.Status.Rollout.Phase == v1alpha1.RolloutRolledBack && contains(p.Status.Rollout.Canaries, a.opts.Node):
				e.Phase, e.Reason = v1alpha1.ProfileNodeRolledBack, "the canary verification failed; the node has its previous values back"
			}
		}
		if e != nil {
			if tie != nil && winner != nil && p.Name == winner.Name {
				e.Reason = strings.TrimSpace(e.Reason + fmt.Sprintf(" (priority %d ties with %s; %s wins by name)", p.Spec.Priority, strings.Join(tie, ", "), p.Name))
			}
			e.DriftRepairs, e.LastDrift = a.repairs[p.Name], a.lastDrift[p.Name]
			a.report(ctx, p, e)
			continue
		}
		if hasEntry(p, a.opts.Node) {
			a.remove(ctx, p)
		}
	}
	return nil
}

func hasEntry(p *v1alpha1.SchedProfile, node string) bool {
	for _, n := range p.Status.Nodes {
		if n.Node == node {
			return true
		}
	}
	return false
}

func driftMessage(node string, ds []host.Drift) string {
	parts := make([]string, 0, len(ds))
	for _, d := range ds {
		parts = append(parts, fmt.Sprintf("%s was %s, set back to %s", d.Knob, d.Found, d.Want))
	}
	return fmt.Sprintf("node %s: %s", node, strings.Join(parts, "; "))
}

// report applies node's entry to p's status when it changed (or every
// StatusRefresh, for lastCheck).
func (a *Agent) report(ctx context.Context, p *v1alpha1.SchedProfile, e *v1alpha1.ProfileNodeStatus) {
	key, _ := json.Marshal(e)
	now := a.opts.Clock.Now()
	if a.written[p.Name] == string(key) && now.Sub(a.writtenAt[p.Name]) < a.opts.StatusRefresh {
		return
	}
	check := metav1.NewTime(now)
	e.LastCheck = &check
	if err := a.apply(ctx, p.Name, []any{e}); err != nil {
		a.opts.Log.Error(err, "Writing the node's profile status", "profile", p.Name)
		return
	}
	a.written[p.Name], a.writtenAt[p.Name] = string(key), now
}

// remove takes node's entry out of p's status: the agent applies an empty
// list, so the entry it alone owned goes.
func (a *Agent) remove(ctx context.Context, p *v1alpha1.SchedProfile) {
	if err := a.apply(ctx, p.Name, nil); err != nil {
		a.opts.Log.Error(err, "Removing the node from the profile's status", "profile", p.Name)
		return
	}
	delete(a.written, p.Name)
	a.opts.Log.Info("Left the profile's status", "profile", p.Name)
}

func (a *Agent) apply(ctx context.Context, profile string, nodes []any) error {
	status := map[string]any{}
	if nodes != nil {
		status["nodes"] = nodes
	}
	body, err := json.Marshal(map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(),
		"kind":       "SchedProfile",
		"metadata":   map[string]any{"name": profile},
		"status":     status,
	})
	if err != nil {
		return err
	}
	obj := &v1alpha1.SchedProfile{ObjectMeta: metav1.ObjectMeta{Name: profile}}
	err = a.client.Status().Patch(ctx, obj, client.RawPatch(types.ApplyPatchType, body),
		client.FieldOwner(FieldManager(a.opts.Node)), client.ForceOwnership)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// event records an Event about p, as a cluster-scoped object's Events go
// to the default namespace.
func (a *Agent) event(ctx context.Context, p *v1alpha1.SchedProfile, typ, reason, msg string) {
	now := metav1.NewTime(a.opts.Clock.Now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: p.Name + ".", Namespace: metav1.NamespaceDefault},
		InvolvedObject: corev1.ObjectReference{
			APIVersion: v1alpha1.GroupVersion.String(), Kind: "SchedProfile", Name: p.Name, UID: p.UID,
			ResourceVersion: p.ResourceVersion,
		},
		Reason: reason, Message: msg, Type: typ,
		Source:         corev1.EventSource{Component: "schedlab-agent", Host: a.opts.Node},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
		ReportingController: "schedlab.io/agent", ReportingInstance: FieldManager(a.opts.Node),
		Action: "Repair",
	}
	if err := a.client.Create(ctx, ev); err != nil {
		a.opts.Log.Error(err, "Recording an Event", "reason", reason)
	}
}
