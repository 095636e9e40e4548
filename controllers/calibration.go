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
