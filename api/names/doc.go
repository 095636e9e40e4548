// Package names derives the names and label values of the objects the
// schedlab controller creates, so that the controller, the agent and the
// tests agree on them.
//
// It imports the standard library only. Start reading at NodeRun and Lease.
package names
