// Publishes the analyses in a JSONL file through relay's SQL API from
// Node (node-postgres), in a transaction that also writes a row of the
// caller's own; then a rolled-back publish and a rejected one. Prints the
// rejection's SQLSTATE and message as JSON.
//
// Run: node publish.js URL SCHEMA CORPUS
const fs = require('fs');
const { Client } = require('pg');

async function main() {
  const [url, schema, corpus] = process.argv.slice(2);
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`SET search_path TO ${client.escapeIdentifier(schema)}`);

    await client.query('BEGIN');
    await client.query("INSERT INTO callers_own VALUES ('node committed')");
    for (const line of fs.readFileSync(corpus, 'utf8').split('\n')) {
      if (line.trim() !== '') {
        await client.query('SELECT relay_publish($1::jsonb)', [line]);
      }
    }
    await client.query('COMMIT');

    await client.query('BEGIN');
    await client.query("INSERT INTO callers_own VALUES ('node rolled back')");
    await client.query('SELECT relay_publish($1::jsonb)', ['{"fileId": "rolled/back.py", "pois": []}']);
    await client.query('ROLLBACK');

    let rejected = null;
    await client.query('BEGIN');
    try {
      await client.query('SELECT relay_publish($1::jsonb)', ['{"fileId": "rejected.py", "pois": {}}']);
    } catch (e) {
      rejected = { sqlstate: e.code, message: e.message };
    }
    await client.query('ROLLBACK');
    console.log(JSON.stringify({ rejected }));
  } finally {
    await client.end();
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
