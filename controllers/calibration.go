package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/experiment"
)

// +kubebuilder:rbac:groups=core,namespace=schedlab-system,resources=configmaps,verbs=get;list;watch

// calibrations reads the simulator calibration stored for each shape, a
// ConfigMap per shape in the operator's namespace (schedlab calibrate
// writes them). A shape without one is predicted uncalibrated; an unreadable
// one is skipped with a warning.
func (r *SchedExperimentReconciler) calibrations(ctx context.Context, s *scope, shapes []v1alpha1.NodeShape) ([]v1alpha1.ShapeCalibration, error) {
	var out []v1alpha1.ShapeCalibration
	for _, sh := range shapes {
		shape := shapeName(sh)
		name := experiment.CalibrationConfigMapName(shape)
		cm := &corev1.ConfigMap{}
		err := r.Client.Get(ctx, types.NamespacedName{Namespace: r.Config.Namespace, Name: name}, cm)
		switch {
		case apierrors.IsNotFound(err):
			r.legacyCalibration(ctx, s, sh, shape)
			continue
		case err != nil:
			return nil, fmt.Errorf("reading calibration ConfigMap %s: %w", name, err)
		}
		c, err := experiment.ParseCalibrationConfigMap(cm.Data)
		if err != nil {
			s.event(corev1.EventTypeWarning, "BadCalibration", "Analyze", fmt.Sprintf("Ignoring calibration ConfigMap %s/%s: %v", cm.Namespace, name, err))
			continue
		}
		c.Shape, c.ConfigMap = shape, name
		out = append(out, c)
	}
	return out, nil
}

// legacyCalibration warns when a shape has no calibration under its name but
// one is stored under the shape's older, shorter name ("2cpu-EEVDF", from
// before names carried the kernel release, tick rate and preemption model):
// that calibration may come from another kernel, so it is not used, and
// schedlab calibrate names it anew.
func (r *SchedExperimentReconciler) legacyCalibration(ctx context.Context, s *scope, sh v1alpha1.NodeShape, shape string) {
	old := v1alpha1.ShapeName(sh.CPUs, sh.Scheduler)
	if old == shape {
		return
	}
	name := experiment.CalibrationConfigMapName(old)
	cm := &corev1.ConfigMap{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: r.Config.Namespace, Name: name}, cm); err != nil {
		return
	}
	s.event(corev1.EventTypeWarning, "CalibrationUnderOldName", "Analyze", fmt.Sprintf(
		"Shape %s is predicted uncalibrated: ConfigMap %s/%s holds a calibration under the older name %s, which does not say the kernel, tick rate or preemption model it was measured with; run schedlab calibrate on a node of this shape to store it as %s",
		shape, cm.Namespace, name, old, experiment.CalibrationConfigMapName(shape)))
}
