package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of the schedlab API.
	GroupVersion = schema.GroupVersion{Group: "schedlab.io", Version: "v1alpha1"}

	// SchemeBuilder adds the schedlab types to a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the schedlab types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&SchedExperiment{}, &SchedExperimentList{},
		&NodeRun{}, &NodeRunList{},
		&SchedProfile{}, &SchedProfileList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
