package experiment

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/simengine"
)

// CalibrationFile is how fitted calibrations are stored locally (schedlab
// calibrate -o FILE, schedlab plan --calibration FILE): one entry per node
// shape, the same as status.calibration.
type CalibrationFile struct {
	Shapes []v1alpha1.ShapeCalibration `json:"shapes"`
}

// CalibrationConfigMapKey is the data key of a calibration ConfigMap; its
// value is one ShapeCalibration as JSON.
const CalibrationConfigMapKey = "calibration.json"

// CalibrationConfigMapName names the ConfigMap holding a shape's
// calibration in the operator's namespace, e.g.
// "schedlab-calibration-8cpu-eevdf".
func CalibrationConfigMapName(shape string) string {
	return "schedlab-calibration-" + strings.ToLower(shape)
}

// CalibrationConfigMapData is the ConfigMap data for a shape's calibration.
func CalibrationConfigMapData(c v1alpha1.ShapeCalibration) (map[string]string, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	return map[string]string{CalibrationConfigMapKey: string(b)}, nil
}

// ParseCalibrationConfigMap reads a calibration ConfigMap's data.
func ParseCalibrationConfigMap(data map[string]string) (v1alpha1.ShapeCalibration, error) {
	var c v1alpha1.ShapeCalibration
	raw, ok := data[CalibrationConfigMapKey]
	if !ok {
		return c, fmt.Errorf("no %s key", CalibrationConfigMapKey)
	}
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		return c, fmt.Errorf("%s: %w", CalibrationConfigMapKey, err)
	}
	return c, validCalibration(c)
}

// SimCalibration is the simulator's form of a stored calibration.
func SimCalibration(c v1alpha1.ShapeCalibration) simengine.Calibration {
	return simengine.Calibration{
		TimerOverheadNs:  c.TimerOverheadNs,
		WakeupOverheadNs: c.WakeupOverheadNs,
		CtxSwitchNs:      c.CtxSwitchNs,
		BackgroundLoad:   c.BackgroundLoad,
	}
}

// CalibrationMap turns stored calibrations into PredictOptions.Calibration.
func CalibrationMap(cs []v1alpha1.ShapeCalibration) map[string]simengine.Calibration {
	m := make(map[string]simengine.Calibration, len(cs))
	for _, c := range cs {
		m[c.Shape] = SimCalibration(c)
	}
	return m
}

func validCalibration(c v1alpha1.ShapeCalibration) error {
	switch {
	case c.Shape == "":
		return fmt.Errorf("calibration without a shape name")
	case c.TimerOverheadNs < 0 || c.WakeupOverheadNs < 0 || c.CtxSwitchNs < 0:
		return fmt.Errorf("calibration of %s: overheads must not be negative", c.Shape)
	case c.TimerOverheadNs > 10_000_000 || c.WakeupOverheadNs > 10_000_000 || c.CtxSwitchNs > 10_000_000:
		return fmt.Errorf("calibration of %s: overheads above 10ms are not plausible", c.Shape)
	case c.BackgroundLoad < 0 || c.BackgroundLoad > 0.95:
		return fmt.Errorf("calibration of %s: backgroundLoad must be within 0..0.95", c.Shape)
	}
	return nil
}

// LoadCalibrationFile reads a calibration file.
func LoadCalibrationFile(path string) (*CalibrationFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f CalibrationFile
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: not a calibration file: %w", path, err)
	}
	for _, c := range f.Shapes {
		if err := validCalibration(c); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return &f, nil
}

// WriteCalibrationFile writes (or merges into) a calibration file: entries
// for other shapes already in the file are kept.
func WriteCalibrationFile(path string, cs []v1alpha1.ShapeCalibration) error {
	var f CalibrationFile
	if old, err := LoadCalibrationFile(path); err == nil {
		f = *old
	}
	for _, c := range cs {
		replaced := false
		for i := range f.Shapes {
			if f.Shapes[i].Shape == c.Shape {
				f.Shapes[i], replaced = c, true
			}
		}
		if !replaced {
			f.Shapes = append(f.Shapes, c)
		}
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
