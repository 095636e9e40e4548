// Package analysis is the production controllers.Analyzer: it runs the one
// translation of internal/experiment (simulator predictions per node shape,
// aggregation over nodes × repetitions, comparison, best variant).
//
// It may import controllers, the API and internal/experiment. Start at Analyze.
package analysis
