// Package hostile runs relay's hostile and malformed input corpus
// (testdata/manifest.json) through `relay publish` and `relay worker
// --until-idle`, and checks each case's expected outcome: rejected at
// publish with a named error, dead-lettered with an error class, or
// accepted; never a panic, never a crash loop, nothing accepted lost. It
// also sends SQL injection attempts through every operator filter. The
// package holds only tests.
package hostile
