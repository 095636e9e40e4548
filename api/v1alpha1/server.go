package v1alpha1

import (
	"fmt"
	"time"
)

// PatternError is one problem of a pattern: Field is relative to the
// pattern (".rate"; "" for the pattern itself).
// +kubebuilder:object:generate=false
type PatternError struct{ Field, Msg string }

// ServerErrors checks a Server pattern's fields, and that no other pattern
// sets them, as the CRD's CEL rules do; the validator and the agent both use
// it. tasks is the group's workers per replica.
func (p *Pattern) ServerErrors(tasks int32) []PatternError {
	var errs []PatternError
	add := func(field, format string, a ...any) {
		errs = append(errs, PatternError{field, fmt.Sprintf(format, a...)})
	}
	if p.Type != PatternServer {
		if p.Rate != nil || p.Arrivals != "" || p.Service != nil || p.Fanout != nil || p.Queue != nil {
			add("", "rate, arrivals, service, fanout and queue apply to a Server pattern only")
		}
		return errs
	}
	if p.Rate == nil || p.Service == nil {
		add("", "a Server pattern needs rate and service")
	}
	if p.Rate != nil && (*p.Rate < 1 || *p.Rate > MaxServerRate) {
		add(".rate", "%d is out of range: rate is 1..%d requests per second per replica", *p.Rate, MaxServerRate)
	}
	switch p.Arrivals {
	case "", ArrivalsPoisson, ArrivalsPeriodic:
	default:
		add(".arrivals", "%q: use Poisson or Periodic", p.Arrivals)
	}
	if p.Fanout != nil && (*p.Fanout < 1 || *p.Fanout > tasks) {
		add(".fanout", "%d: a Server's fanout must be between 1 and the group's tasks (%d, the workers of one replica)", *p.Fanout, tasks)
	}
	if p.Queue != nil && (*p.Queue < 1 || *p.Queue > MaxServerQueue) {
		add(".queue", "%d is out of range 1..%d", *p.Queue, MaxServerQueue)
	}
	if sv := p.Service; sv != nil {
		if sv.Mean.Duration < time.Microsecond || sv.Mean.Duration > time.Second {
			add(".service.mean", "%s is out of range: service mean must be between 1us and 1s", sv.Mean.Duration)
		}
		switch sv.Distribution {
		case "", ServiceFixed, ServiceExponential:
			if sv.P99 != nil {
				add(".service.p99", "p99 applies to a Lognormal service time only")
			}
		case ServiceLognormal:
			switch {
			case sv.P99 == nil:
				add(".service", "a Lognormal service time needs p99 (and mean)")
			case sv.P99.Duration <= sv.Mean.Duration || sv.P99.Duration > MaxLognormalP99OverMean*sv.Mean.Duration:
				add(".service.p99", "%s: a Lognormal service time's p99 must be above its mean and at most %d times the mean (%s)", sv.P99.Duration, MaxLognormalP99OverMean, sv.Mean.Duration)
			}
		default:
			add(".service.distribution", "%q: use Fixed, Exponential or Lognormal", sv.Distribution)
		}
	}
	return errs
}
