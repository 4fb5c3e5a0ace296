// Package docexamples finds the code blocks of relay's Markdown
// documentation (README.md, docs/*.md) that a reader would paste, so that
// its tests can run them as written, against the database `relay demo`
// (make demo) leaves: every ```sql block through psql, every ```sh block's
// relay commands, every ```python block with python3 and psycopg 3, every
// ```ts block type-checked and compiled by tsc then run by Node with
// node-postgres, and every ```java block as a single-file program with the
// PostgreSQL JDBC driver (`make clients` installs them all).
//
// A block that is not meant to run says so, and why, on the line before its
// opening fence:
//
//	<!-- not-run: the reason -->
//
// A block in a language that is pasted (sql, sh, python, ts, java, js, go)
// without that marker must run (js and go have no runner, so their blocks
// need the marker); data and output (json, yaml, ini, or no language) are
// never run.
package docexamples
