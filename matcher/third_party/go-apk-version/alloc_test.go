package version

import (
	"runtime"
	"testing"
)

// TestCompareAllocatesLittle holds the Crowsnest patch (PATCH.md) to its
// point: upstream allocated a 4 KiB bufio buffer for each side of every
// comparison (8.3 KB per Compare); the patch's 16-byte buffers leave a few
// hundred bytes. Bytes allocated are counted, not timed.
func TestCompareAllocatesLittle(t *testing.T) {
	const n = 1000
	pairs := [][2]Version{{"1.2.3-r0", "1.2.4-r1"}, {"3.1.4_alpha2-r3", "3.1.4_rc1-r3"}, {"0.0.1_p20230101-r10", "0.0.1_git20221231-r10"}}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range n {
		p := pairs[i%len(pairs)]
		_ = p[0].Compare(p[1])
	}
	runtime.ReadMemStats(&after)
	per := (after.TotalAlloc - before.TotalAlloc) / n
	t.Logf("%d bytes allocated per Compare", per)
	if per > 1024 {
		t.Errorf("Compare allocates %d bytes, want at most 1024", per)
	}
}
