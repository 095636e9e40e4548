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

// TimerPath needs Linux.
func TimerPath(ctx context.Context, n int) (*v1alpha1.TimerPathSample, error) {
	return nil, errors.New("the timer path measurement needs Linux")
}

// TimerPathOtherCPUs needs Linux.
func TimerPathOtherCPUs(ctx context.Context, n int) ([]v1alpha1.TimerPathSample, error) {
	return nil, errors.New("the timer path measurement needs Linux")
}
