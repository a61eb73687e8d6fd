// Package exit holds the process exit codes every verb answers with, and
// the error that carries one up through cobra to main. They are one list
// because scripts branch on them: a verb that chose its own numbers would
// break the contract the others keep.
package exit
