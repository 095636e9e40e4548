// Package util holds helpers that tests of several packages share: what a
// measurement on this machine should show, derived once (shares.go).
// It imports only the standard library; test code alone imports it.
package util
