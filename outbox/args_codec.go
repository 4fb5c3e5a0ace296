package outbox

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// maxDecodedPOIBytes bounds what one job's poisZstd may decompress to, so a
// corrupt or hostile row cannot exhaust the worker's memory. A job carries at
// most max_job_bytes (4 MiB by default) of POI JSON plus one POI.
const maxDecodedPOIBytes = 1 << 30

// storedArgs is ResolveFileArgs as stored in river_job.args. POIs holds the
// readable form (jobs enqueued before compression, ExpandArgs' output);
// POIsZstd the compressed one, which MarshalJSON writes: the zstd
// compression of every POI's JSON, each preceded by its length as an
// unsigned varint, in order. POICount is the number of POIs either way, for
// SQL and as a check on decoding.
type storedArgs struct {
	Repository   string            `json:"repository,omitempty"`
	FileID       string            `json:"fileId"`
	FileVersion  int64             `json:"fileVersion"`
	PublishXID   int64             `json:"publishXid,omitempty"`
	POICount     int               `json:"poiCount"`
	POIsZstd     []byte            `json:"poisZstd,omitempty"`
	POIs         []json.RawMessage `json:"pois,omitempty"`
	Part         int               `json:"part,omitempty"`
	Parts        int               `json:"parts,omitempty"`
	ChangedNames []string          `json:"changedNames,omitempty"`
	FailedPOIIDs []int64           `json:"failedPoiIds,omitempty"`
}

// poiCodec is one zstd encoder and decoder shared by every job: both are
// safe for concurrent use and costly to create, like a compiled regexp.
var poiCodec = sync.OnceValues(func() (*zstdCodec, error) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		return nil, fmt.Errorf("error creating the zstd encoder for job args: %w", err)
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderMaxMemory(maxDecodedPOIBytes))
	if err != nil {
		return nil, fmt.Errorf("error creating the zstd decoder for job args: %w", err)
	}
	return &zstdCodec{enc: enc, dec: dec}, nil
})

type zstdCodec struct {
	enc *zstd.Encoder
	dec *zstd.Decoder
}

// MarshalJSON writes the args with the POIs compressed (poisZstd).
func (a ResolveFileArgs) MarshalJSON() ([]byte, error) {
	s := a.stored()
	if len(a.POIs) > 0 {
		codec, err := poiCodec()
		if err != nil {
			return nil, err
		}
		size := 0
		for _, raw := range a.POIs {
			size += len(raw) + binary.MaxVarintLen32
		}
		framed := make([]byte, 0, size)
		for _, raw := range a.POIs {
			framed = binary.AppendUvarint(framed, uint64(len(raw)))
			framed = append(framed, raw...)
		}
		s.POIsZstd = codec.enc.EncodeAll(framed, nil)
	}
	return json.Marshal(s)
}

// UnmarshalJSON reads args in either stored form.
func (a *ResolveFileArgs) UnmarshalJSON(data []byte) error {
	var s storedArgs
	if err := json.Unmarshal(data, &s); err != nil {
		var named struct {
			FileID string `json:"fileId"`
		}
		_ = json.Unmarshal(data, &named) // best effort, for the message
		return fmt.Errorf("resolve_file args of file %q: %w", named.FileID, err)
	}
	*a = ResolveFileArgs{Repository: s.Repository, FileID: s.FileID, FileVersion: s.FileVersion, PublishXID: s.PublishXID, POIs: s.POIs,
		Part: s.Part, Parts: s.Parts, ChangedNames: s.ChangedNames, FailedPOIIDs: s.FailedPOIIDs}
	if s.POIsZstd == nil {
		if a.POIs == nil {
			a.POIs = []json.RawMessage{}
		}
		return nil
	}
	if s.POIs != nil {
		return fmt.Errorf("resolve_file args of file %q hold both pois and poisZstd", s.FileID)
	}
	pois, err := decodePOIs(s.POIsZstd, s.POICount)
	if err != nil {
		return fmt.Errorf("resolve_file args of file %q: poisZstd: %w", s.FileID, err)
	}
	a.POIs = pois
	return nil
}

// decodePOIs decompresses poisZstd into count POIs. The POIs share one
// buffer.
func decodePOIs(compressed []byte, count int) ([]json.RawMessage, error) {
	codec, err := poiCodec()
	if err != nil {
		return nil, err
	}
	framed, err := codec.dec.DecodeAll(compressed, nil)
	if err != nil {
		return nil, fmt.Errorf("error decompressing: %w", err)
	}
	if count < 0 || count > len(framed) {
		return nil, fmt.Errorf("poiCount %d does not fit %d decompressed bytes", count, len(framed))
	}
	pois := make([]json.RawMessage, 0, count)
	for len(framed) > 0 {
		n, k := binary.Uvarint(framed)
		if k <= 0 || n > uint64(len(framed)-k) {
			return nil, fmt.Errorf("POI #%d: bad length prefix", len(pois))
		}
		framed = framed[k:]
		pois = append(pois, json.RawMessage(framed[:n:n]))
		framed = framed[n:]
	}
	if len(pois) != count {
		return nil, fmt.Errorf("holds %d POIs, poiCount says %d", len(pois), count)
	}
	return pois, nil
}

func (a ResolveFileArgs) stored() storedArgs {
	return storedArgs{Repository: a.Repository, FileID: a.FileID, FileVersion: a.FileVersion, PublishXID: a.PublishXID, POICount: len(a.POIs),
		Part: a.Part, Parts: a.Parts, ChangedNames: a.ChangedNames, FailedPOIIDs: a.FailedPOIIDs}
}

// ExpandArgs rewrites stored resolve_file args in the readable form, every
// POI's JSON in a pois array, for people and for copies that outlive the
// job (dead_lettered_items.item_data of a batch River discarded).
func ExpandArgs(stored []byte) ([]byte, error) {
	var a ResolveFileArgs
	if err := json.Unmarshal(stored, &a); err != nil {
		return nil, fmt.Errorf("error decoding resolve_file args: %w", err)
	}
	s := a.stored()
	s.POIs = a.POIs
	out, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("error encoding resolve_file args: %w", err)
	}
	return out, nil
}
