package rematch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// FootprintFile is the bbolt file a pass keeps report footprints in, in
// its Dir.
const FootprintFile = "rematch-footprints.db"

// footprintFormat names the keys' meaning (footprint.go, dbdiff.go): a
// store written with another is emptied, as is one written by another
// Grype version (its matchers may look other things up).
const footprintFormat = "1"

var (
	bucketMeta    = []byte("meta")
	bucketKeys    = []byte("keys")    // key -> uvarint id
	bucketReports = []byte("reports") // digest -> footprint
	metaTool      = []byte("tool")
	metaNextKey   = []byte("next-key")
)

// FootprintStore keeps, per report, the footprint of its last match: the
// DB build it was matched against, the fingerprint of the findings that
// match produced and the ids of its footprint keys (keys are interned).
// It is a cache: a report without one is matched in full.
type FootprintStore struct{ db *bolt.DB }

// footprint is one report's entry. Keys is set when it is written from a
// match; ids when it is read (or carried over by a skip).
type footprint struct {
	Built    time.Time
	Findings []byte // finding.Fingerprint
	Keys     []string
	ids      []uint64
}

// OpenFootprints opens (creating) dir/FootprintFile, emptied if it was
// written by another Grype version or key format.
func OpenFootprints(dir string) (*FootprintStore, error) {
	path := filepath.Join(dir, FootprintFile)
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("open footprints %s: %w", path, err)
	}
	tool := []byte(identification().Version + "/" + footprintFormat)
	err = db.Update(func(tx *bolt.Tx) error {
		if m := tx.Bucket(bucketMeta); m == nil || !bytes.Equal(m.Get(metaTool), tool) {
			for _, b := range [][]byte{bucketMeta, bucketKeys, bucketReports} {
				if err := tx.DeleteBucket(b); err != nil && !errors.Is(err, bolterrors.ErrBucketNotFound) {
					return err
				}
			}
		}
		for _, b := range [][]byte{bucketMeta, bucketKeys, bucketReports} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketMeta).Put(metaTool, tool)
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open footprints %s: %w", path, err)
	}
	return &FootprintStore{db: db}, nil
}

// Close closes the file.
func (s *FootprintStore) Close() error { return s.db.Close() }

// get returns digest's footprint (ids, not keys).
func (s *FootprintStore) get(digest string) (footprint, bool, error) {
	var fp footprint
	var ok bool
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketReports).Get([]byte(digest))
		if v == nil {
			return nil
		}
		var err error
		fp, err = decodeFootprint(v)
		ok = err == nil
		return err
	})
	return fp, ok, err
}

// put writes footprints (by digest) in one transaction, interning keys.
func (s *FootprintStore) put(fps map[string]footprint) error {
	if len(fps) == 0 {
		return nil
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		keys, meta, reports := tx.Bucket(bucketKeys), tx.Bucket(bucketMeta), tx.Bucket(bucketReports)
		next, _ := binary.Uvarint(meta.Get(metaNextKey))
		for digest, fp := range fps {
			ids := fp.ids
			if fp.Keys != nil {
				ids = make([]uint64, 0, len(fp.Keys))
				for _, k := range fp.Keys {
					if v := keys.Get([]byte(k)); v != nil {
						id, _ := binary.Uvarint(v)
						ids = append(ids, id)
						continue
					}
					next++
					if err := keys.Put([]byte(k), binary.AppendUvarint(nil, next)); err != nil {
						return err
					}
					ids = append(ids, next)
				}
			}
			if err := reports.Put([]byte(digest), encodeFootprint(fp.Built, fp.Findings, ids)); err != nil {
				return err
			}
		}
		return meta.Put(metaNextKey, binary.AppendUvarint(nil, next))
	})
}

// keyIDs returns the ids of the keys the store has seen (a key it never
// interned is in no footprint).
func (s *FootprintStore) keyIDs(keys map[string]struct{}) (map[uint64]struct{}, error) {
	out := map[uint64]struct{}{}
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketKeys)
		for k := range keys {
			if v := b.Get([]byte(k)); v != nil {
				id, _ := binary.Uvarint(v)
				out[id] = struct{}{}
			}
		}
		return nil
	})
	return out, err
}

// encodeFootprint: built (unix seconds, 8 bytes), the fingerprint's length
// and bytes, then the key ids sorted, as uvarint deltas.
func encodeFootprint(built time.Time, findings []byte, ids []uint64) []byte {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	b := binary.BigEndian.AppendUint64(nil, uint64(built.Unix()))
	b = append(b, byte(len(findings)))
	b = append(b, findings...)
	var prev uint64
	for _, id := range ids {
		b = binary.AppendUvarint(b, id-prev)
		prev = id
	}
	return b
}

func decodeFootprint(v []byte) (footprint, error) {
	bad := errors.New("corrupt footprint")
	if len(v) < 9 || len(v) < 9+int(v[8]) {
		return footprint{}, bad
	}
	fp := footprint{Built: time.Unix(int64(binary.BigEndian.Uint64(v)), 0).UTC()}
	n := int(v[8])
	fp.Findings = slices.Clone(v[9 : 9+n])
	rest := v[9+n:]
	var prev uint64
	for len(rest) > 0 {
		d, k := binary.Uvarint(rest)
		if k <= 0 {
			return footprint{}, bad
		}
		prev += d
		fp.ids = append(fp.ids, prev)
		rest = rest[k:]
	}
	return fp, nil
}

// meets reports whether any of fp's keys is among ids.
func (fp footprint) meets(ids map[uint64]struct{}) bool {
	for _, id := range fp.ids {
		if _, ok := ids[id]; ok {
			return true
		}
	}
	return false
}
