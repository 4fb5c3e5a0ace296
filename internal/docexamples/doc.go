// Package docexamples finds the code blocks of relay's Markdown
// documentation (README.md, docs/*.md) that a reader would paste, so that
// its tests can run them as written: every ```sql block through psql, and
// every ```sh block's relay commands, against the database `relay demo`
// (make demo) leaves.
//
// A block that is not meant to run says so, and why, on the line before its
// opening fence:
//
//	<!-- not-run: the reason -->
//
// A block in a language that is pasted (sql, sh, python, ts, java, go, ...)
// without that marker must run; data and output (json, yaml, ini, or no
// language) are never run.
package docexamples
