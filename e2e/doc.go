// Package e2e holds the tests that start the real stack: the local
// sandbox runtime (pkg/e2blocal), the AWS stand-ins and the API, wired as
// `sessionbox serve` and the Lambda functions wire them. Every other
// package tests with fakes in seconds; these need Linux, take minutes, and
// skip under -short. The package has no code outside its tests.
package e2e
