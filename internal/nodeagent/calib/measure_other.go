//go:build !linux

package calib

import (
	"context"
	"errors"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// Measure needs Linux.
func Measure(ctx context.Context, opts Options) (*v1alpha1.NodeCalibration, error) {
	return nil, errors.New("the calibration window needs Linux")
}
