// Package api holds what every schedlab component shares about the API
// beside its types: NewScheme, the one runtime.Scheme of the manager, the
// agent, the CLI's clients and the tests. The types are in v1alpha1, the
// names of the objects schedlab creates in names, and the Go copy of the
// schema's rules in v1alpha1/validation.
//
// It may import apimachinery, client-go's scheme and the API packages only.
package api
