package controllers

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/schedlab/schedlab/api/names"
	"github.com/schedlab/schedlab/api/v1alpha1"
)

// fullResults is what a status held before boundStatus cut it: the whole
// of results and sweep, for the ConfigMaps status.fullResults names.
type fullResults struct {
	Results []v1alpha1.GroupResult `json:"results,omitempty"`
	Sweep   *v1alpha1.SweepStatus  `json:"sweep,omitempty"`
}

// boundStatus keeps the status within v1alpha1.MaxStatusBytes, so that its
// write is never refused for size (and the simulation behind it never runs
// again for nothing). First the sweep curves are thinned (every k-th point,
// the first and the last kept; answers untouched), then result rows beyond
// what fits are left out. status.omitted says what was left out; an Event
// says so once. It returns the whole of results and sweep when it cut
// them (nil when the status fits), for storeFullResults; the size is
// counted with room for the largest status.fullResults.
func boundStatus(s *scope) *fullResults {
	st := s.status
	size := statusBytes(st)
	if size <= v1alpha1.MaxStatusBytes {
		return nil
	}
	full := &fullResults{Results: st.Results, Sweep: st.Sweep.DeepCopy()}
	st.FullResults = largestFullResultsRef(s.exp.Name)
	size = statusBytes(st)
	before := size
	var notes []string
	if sw := st.Sweep; sw != nil {
		total := 0
		for _, sh := range sw.Shapes {
			total += len(sh.Points)
		}
		full := make([][]v1alpha1.SweepPoint, len(sw.Shapes))
		for i := range sw.Shapes {
			full[i] = sw.Shapes[i].Points
		}
		for k := 2; size > v1alpha1.MaxStatusBytes && k <= 4096; k *= 2 {
			kept := 0
			for i := range sw.Shapes {
				sw.Shapes[i].Points = thin(full[i], k)
				kept += len(sw.Shapes[i].Points)
			}
			size = statusBytes(st)
			if size <= v1alpha1.MaxStatusBytes || k == 4096 {
				notes = append(notes, fmt.Sprintf("sweep curves keep every %dth point (%d of %d points; the answers are exact)", k, kept, total))
			}
		}
	}
	if size > v1alpha1.MaxStatusBytes && len(st.Results) > 0 {
		all := len(st.Results)
		lo, hi := 0, all // the most rows that fit, by bisection
		rows := st.Results
		for lo < hi {
			mid := (lo + hi + 1) / 2
			st.Results = rows[:mid]
			if statusBytes(st) <= v1alpha1.MaxStatusBytes {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		st.Results = rows[:lo]
		size = statusBytes(st)
		notes = append(notes, fmt.Sprintf("%d of %d result rows", all-lo, all))
	}
	if len(notes) == 0 {
		st.FullResults = nil
		return nil
	}
	st.Omitted = fmt.Sprintf("the status (%d KiB) was cut to %d KiB, within %d KiB: %s", before>>10, size>>10, v1alpha1.MaxStatusBytes>>10, strings.Join(notes, "; "))
	if s.exp.Status.Omitted != st.Omitted {
		s.event(corev1.EventTypeWarning, "StatusSummarized", "BoundStatus", st.Omitted)
	}
	return full
}

// maxFullResultsParts bounds the ConfigMaps of one experiment's full
// results (status.fullResults.configMaps' MaxItems); fullResultsPart is
// the gzipped bytes each holds, within a ConfigMap's 1 MiB.
const (
	maxFullResultsParts = 16
	fullResultsPart     = 768 << 10
)

// largestFullResultsRef is a status.fullResults as large as one can be, to
// count its room in the status before the real one is known.
func largestFullResultsRef(exp string) *v1alpha1.FullResultsRef {
	ref := &v1alpha1.FullResultsRef{Namespace: strings.Repeat("n", 63), Generation: 1 << 62, SHA256: strings.Repeat("0", 64), Bytes: 1 << 40}
	for i := 0; i < maxFullResultsParts; i++ {
		ref.ConfigMaps = append(ref.ConfigMaps, names.FullResults(exp, i+10))
	}
	return ref
}

// storeFullResults writes what boundStatus cut into ConfigMaps owned by the
// experiment in the operator's namespace and names them in
// status.fullResults (only when their content changed). When the status
// was not cut and says nothing is omitted (a new generation, results that
// fit), the ConfigMaps of an earlier status are deleted and the reference
// cleared. A failure leaves status.fullResults out and is returned: the
// workqueue backs off and the next reconcile writes them (the cut status
// itself is never lost for it).
func (r *SchedExperimentReconciler) storeFullResults(ctx context.Context, s *scope, full *fullResults) error {
	ns := r.Config.Namespace
	if full == nil {
		if s.status.Omitted != "" || s.exp.Status.FullResults == nil {
			return nil // kept as it is, or none
		}
		s.status.FullResults = nil
		return r.deleteFullResults(ctx, s, 0)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(full); err != nil {
		s.status.FullResults = nil
		return err
	}
	if err := zw.Close(); err != nil {
		s.status.FullResults = nil
		return err
	}
	sum := sha256.Sum256(buf.Bytes())
	ref := &v1alpha1.FullResultsRef{Namespace: ns, Generation: s.exp.Generation, SHA256: hex.EncodeToString(sum[:]), Bytes: int64(buf.Len())}
	data := buf.Bytes()
	for i := 0; len(data) > 0; i++ {
		if i == maxFullResultsParts {
			s.status.FullResults = nil
			s.status.Omitted += fmt.Sprintf("; the whole results (%d KiB gzipped) are more than %d ConfigMaps hold and are not kept", buf.Len()>>10, maxFullResultsParts)
			return nil
		}
		n := min(len(data), fullResultsPart)
		ref.ConfigMaps = append(ref.ConfigMaps, names.FullResults(s.exp.Name, i))
		data = data[n:]
	}
	if old := s.exp.Status.FullResults; old != nil && old.SHA256 == ref.SHA256 && old.Namespace == ns && slices.Equal(old.ConfigMaps, ref.ConfigMaps) {
		s.status.FullResults = old.DeepCopy()
		return nil // already written
	}
	s.status.FullResults = nil // until they are written
	data = buf.Bytes()
	for i, name := range ref.ConfigMaps {
		n := min(len(data), fullResultsPart)
		if err := r.writeFullResultsPart(ctx, s, name, data[:n]); err != nil {
			return fmt.Errorf("writing part %d of %d of the full results into ConfigMap %s/%s: %w", i+1, len(ref.ConfigMaps), ns, name, err)
		}
		data = data[n:]
	}
	if err := r.deleteFullResults(ctx, s, len(ref.ConfigMaps)); err != nil {
		return err
	}
	s.status.FullResults = ref
	return nil
}

func (r *SchedExperimentReconciler) writeFullResultsPart(ctx context.Context, s *scope, name string, part []byte) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: r.Config.Namespace, Name: name}}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	create := apierrors.IsNotFound(err)
	if !create && !metav1.IsControlledBy(cm, s.exp) {
		// Left by an earlier experiment of the same name.
		if err := r.deleteObject(ctx, cm); err != nil {
			return err
		}
		return fmt.Errorf("an earlier experiment's ConfigMap was in the way (deleted)")
	}
	if cm.Labels == nil {
		cm.Labels = map[string]string{}
	}
	cm.Labels[names.ManagedByLabel] = names.ManagedByValue
	cm.Labels[names.ResultsOfLabel] = names.LabelValue(s.exp.Name)
	cm.Labels[names.GenerationLabel] = strconv.FormatInt(s.exp.Generation, 10)
	cm.Data = nil
	cm.BinaryData = map[string][]byte{v1alpha1.FullResultsKey: part}
	if create {
		if err := controllerutil.SetControllerReference(s.exp, cm, r.Client.Scheme()); err != nil {
			return err
		}
		return r.Client.Create(ctx, cm)
	}
	return r.Client.Update(ctx, cm)
}

// deleteFullResults deletes the experiment's full-results ConfigMaps from
// part from on.
func (r *SchedExperimentReconciler) deleteFullResults(ctx context.Context, s *scope, from int) error {
	var cms corev1.ConfigMapList
	if err := r.Client.List(ctx, &cms, client.InNamespace(r.Config.Namespace), client.MatchingLabels{names.ResultsOfLabel: names.LabelValue(s.exp.Name)}); err != nil {
		return fmt.Errorf("listing the full-results ConfigMaps: %w", err)
	}
	keep := map[string]bool{}
	for i := 0; i < from; i++ {
		keep[names.FullResults(s.exp.Name, i)] = true
	}
	for i := range cms.Items {
		cm := &cms.Items[i]
		if keep[cm.Name] && metav1.IsControlledBy(cm, s.exp) {
			continue
		}
		if err := r.deleteObject(ctx, cm); err != nil {
			return fmt.Errorf("deleting full-results ConfigMap %s: %w", cm.Name, err)
		}
	}
	return nil
}

// ReadFullResults reads the whole results and sweep that status.fullResults
// names, checking their sum.
func ReadFullResults(ctx context.Context, c client.Reader, ref *v1alpha1.FullResultsRef) ([]v1alpha1.GroupResult, *v1alpha1.SweepStatus, error) {
	var data []byte
	for _, name := range ref.ConfigMaps {
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: name}, cm); err != nil {
			return nil, nil, fmt.Errorf("reading ConfigMap %s/%s: %w", ref.Namespace, name, err)
		}
		data = append(data, cm.BinaryData[v1alpha1.FullResultsKey]...)
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != ref.SHA256 {
		return nil, nil, fmt.Errorf("the full results in %v have sha256 %s, the status says %s", ref.ConfigMaps, got, ref.SHA256)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, nil, err
	}
	var full fullResults
	if err := json.NewDecoder(zr).Decode(&full); err != nil {
		return nil, nil, fmt.Errorf("decoding the full results: %w", err)
	}
	return full.Results, full.Sweep, nil
}

// thin keeps every k-th point of a curve, and its last.
func thin(points []v1alpha1.SweepPoint, k int) []v1alpha1.SweepPoint {
	if len(points) <= 2 {
		return points
	}
	out := make([]v1alpha1.SweepPoint, 0, len(points)/k+2)
	for i := 0; i < len(points); i += k {
		out = append(out, points[i])
	}
	if (len(points)-1)%k != 0 {
		out = append(out, points[len(points)-1])
	}
	return out
}

func statusBytes(st *v1alpha1.SchedExperimentStatus) int {
	b, err := json.Marshal(st)
	if err != nil {
		return 0
	}
	return len(b)
}
