// Package readmetest holds the test that keeps the Go snippets of the
// repository's README.md compiling and running: see readme_test.go.
//
// Every ```go block of the README is preceded by an HTML comment (which
// renderers hide) that says where the test puts it in a scratch module,
// example.com/yourapp, that requires this checkout:
//
//	<!-- readmetest: books/books.go -->
//
// A block that is a fragment is completed by the rest of the comment,
// which the test writes before it (a package clause and imports, say):
//
//	<!-- readmetest: books/books_test.go
//	package books_test
//
//	import "testing"
//	-->
//
// Blocks given the same path are appended to one file, in README order.
// A block the test must leave alone says why:
//
//	<!-- readmetest: skip <reason> -->
//
// The test then runs go vet, go build and go test in the scratch module,
// offline (GOPROXY=off), with the checkout's go.sum and the module and
// build caches of the go command running it. Errors point at README.md
// lines, through //line directives.
package readmetest
