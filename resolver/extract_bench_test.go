package resolver

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// benchJSFunction is a realistic ~2 KB JavaScript function.
const benchJSFunction = `/**
 * Synchronizes the local cache with the remote store.
 * Calls like fetch( in this comment are ignored.
 */
export async function syncCache(store, options = defaultOptions()) {
  const { batchSize = 100, retries = 3, logger = console } = options;
  const started = Date.now();
  let cursor = null;
  let synced = 0;

  // Walk the remote store page by page.
  while (true) {
    const page = await withRetry(() => store.list({ cursor, limit: batchSize }), retries);
    if (!page || page.items.length === 0) {
      break;
    }
    for (const item of page.items) {
      const key = cacheKey(item.namespace, item.id);
      const local = cache.get(key);
      if (local && local.version >= item.version) {
        continue;
      }
      try {
        const body = await store.fetchBody(item.id);
        cache.set(key, normalize(item, body));
        synced += 1;
      } catch (err) {
        logger.warn(` + "`failed to sync ${item.id}: ${err.message}`" + `);
        metrics.increment('cache.sync.failure', { reason: classify(err) });
      }
    }
    cursor = page.nextCursor;
    if (!cursor) {
      break;
    }
  }

  const elapsed = Date.now() - started;
  logger.info("synced %d items in %dms", synced, elapsed);
  metrics.timing('cache.sync.duration', elapsed);
  emit('cache:synced', { synced, elapsed });
  return { synced, elapsed, complete: true };
}

function classify(err) {
  if (err instanceof TimeoutError) return 'timeout';
  if (typeof err.code === 'string') return err.code.toLowerCase();
  return 'unknown';
}

const normalize = (item, body) => ({
  ...item,
  body: JSON.parse(body),
  fetchedAt: new Date().toISOString(),
});
`

func BenchmarkExtract(b *testing.B) {
	oneMB := strings.Repeat(benchJSFunction, 1<<20/len(benchJSFunction))
	benchmarks := []struct {
		name string
		poi  POI
	}{
		{name: "JSFunction2KB", poi: POI{ID: "p", Type: TypeFunction, Name: "syncCache", RawCode: benchJSFunction}},
		{name: "Code1MB", poi: POI{ID: "p", Type: TypeFunction, Name: "syncCache", RawCode: oneMB}},
		{name: "Class1MB", poi: POI{ID: "p", Type: TypeClass, Name: "syncCache", RawCode: oneMB}},
	}
	for _, bm := range benchmarks {
		b.Run(bm.name, func(b *testing.B) {
			ctx := context.Background()
			b.SetBytes(int64(len(bm.poi.RawCode)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Extract(ctx, bm.poi); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecodePOI decodes a POI carrying benchJSFunction as its rawCode,
// through DecodePOI (the fast path) and through encoding/json alone.
func BenchmarkDecodePOI(b *testing.B) {
	raw, err := json.Marshal(map[string]any{
		"id": "src/cache/sync.js#syncCache", "type": TypeFunction, "name": "syncCache",
		"filePath": "src/cache/sync.js", "lineNumber": 12, "rawCode": benchJSFunction, "context": "module cache",
	})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name   string
		decode func([]byte) (POI, error)
	}{{"fast", DecodePOI}, {"encoding_json", decodeGeneral}, {"symbol", func(raw []byte) (POI, error) {
		s := DecodeSymbol(raw)
		return s.POI, s.Err
	}}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bc.decode(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
