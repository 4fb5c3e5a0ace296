"""Publishes the analyses in a JSONL file through relay's SQL API from
Python (psycopg 3), in a transaction that also writes a row of the caller's
own; then a rolled-back publish and a rejected one. Prints the rejection's
SQLSTATE and message as JSON.

Run: python3 publish.py URL SCHEMA CORPUS
"""
import json
import sys

import psycopg
from psycopg import sql

url, schema, corpus = sys.argv[1:4]
with psycopg.connect(url) as conn:
    conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
    conn.commit()

    with conn.transaction():
        conn.execute("INSERT INTO callers_own VALUES ('python committed')")
        with open(corpus, encoding="utf-8") as f:
            for line in f:
                conn.execute("SELECT relay_publish(%s::jsonb)", [line])

    try:
        with conn.transaction():
            conn.execute("INSERT INTO callers_own VALUES ('python rolled back')")
            conn.execute("SELECT relay_publish(%s::jsonb)", ['{"fileId": "rolled/back.py", "pois": []}'])
            raise psycopg.Rollback()
    except psycopg.Rollback:
        pass

    rejected = None
    try:
        with conn.transaction():
            conn.execute("SELECT relay_publish(%s::jsonb)", ['{"fileId": "rejected.py", "pois": {}}'])
    except psycopg.Error as e:
        rejected = {"sqlstate": e.sqlstate, "message": e.diag.message_primary}
    print(json.dumps({"rejected": rejected}))
