package scanbudget

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// TestShareRoundRobinOldestFirst: free slots go one at a time to the
// waiting Scanners, oldest first, each up to what it wants.
func TestShareRoundRobinOldestFirst(t *testing.T) {
	waiting := map[types.NamespacedName]waiter{
		key("a"): {want: 5, since: t0},
		key("b"): {want: 1, since: t0.Add(time.Second)},
		key("c"): {want: 5, since: t0.Add(2 * time.Second)},
	}
	for _, tt := range []struct {
		free    int
		a, b, c int
	}{
		{0, 0, 0, 0}, {1, 1, 0, 0}, {2, 1, 1, 0}, {3, 1, 1, 1}, {5, 2, 1, 2}, {8, 4, 1, 3}, {20, 5, 1, 5},
	} {
		got := share(waiting, nil, tt.free, types.NamespacedName{}, nil)
		if got[key("a")] != tt.a || got[key("b")] != tt.b || got[key("c")] != tt.c {
			t.Errorf("free %d: shares %v, want a=%d b=%d c=%d", tt.free, got, tt.a, tt.b, tt.c)
		}
	}
}

// TestShareMatchesOneSlotAtATime: share's heap gives exactly what handing
// the slots out one at a time by a full scan gives (the definition), on
// random waiting sets with ties in load and in waiting time.
func TestShareMatchesOneSlotAtATime(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 7))
	var buf shareQueue // reused from round to round, as Budget reuses it
	for round := range 500 {
		waiting := map[types.NamespacedName]waiter{}
		running := map[types.NamespacedName]int{}
		for i := range rng.IntN(30) {
			k := key(fmt.Sprintf("ns-%02d", i))
			waiting[k] = waiter{want: rng.IntN(4), since: t0.Add(time.Duration(rng.IntN(3)) * time.Second)}
			running[k] = rng.IntN(3)
		}
		free := rng.IntN(40)
		var first types.NamespacedName // the caller in its turn, or none
		if n := len(waiting); n > 0 && rng.IntN(2) == 0 {
			first = key(fmt.Sprintf("ns-%02d", rng.IntN(n)))
		}
		got, want := share(waiting, running, free, first, &buf), shareByScan(waiting, running, free, first)
		for k := range waiting {
			if got[k] != want[k] {
				t.Fatalf("round %d, free %d, %v: share gives %d, one slot at a time gives %d", round, free, k, got[k], want[k])
			}
		}
	}
}

// shareByScan is share's definition, written the slow way: each slot to the
// first Scanner, in (first, waiting since, namespace, name) order, with the
// fewest Jobs.
func shareByScan(waiting map[types.NamespacedName]waiter, running map[types.NamespacedName]int, free int, first types.NamespacedName) map[types.NamespacedName]int {
	keys := slices.SortedFunc(maps.Keys(waiting), func(a, b types.NamespacedName) int {
		if (a == first) != (b == first) {
			if a == first {
				return -1
			}
			return 1
		}
		if c := waiting[a].since.Compare(waiting[b].since); c != 0 {
			return c
		}
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	out := map[types.NamespacedName]int{}
	for ; free > 0; free-- {
		best := -1
		for i, k := range keys {
			if out[k] < waiting[k].want && (best < 0 || running[k]+out[k] < running[keys[best]]+out[keys[best]]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		out[keys[best]]++
	}
	return out
}

// BenchmarkShare: one admit's fair share with a ClusterScanner over 2,000
// namespaces all waiting and one slot free (the common case while the cap
// is full), by share and by the one-slot-at-a-time definition. Both
// give the same shares (TestShareMatchesOneSlotAtATime); the benchmark
// checks that for its own input too.
func BenchmarkShare(b *testing.B) {
	waiting := map[types.NamespacedName]waiter{}
	running := map[types.NamespacedName]int{}
	for i := range 2000 {
		k := key(fmt.Sprintf("ns-%04d", i))
		waiting[k] = waiter{want: 1 + i%3, since: t0.Add(time.Duration(i%50) * time.Millisecond)}
		running[k] = i % 2
	}
	var buf shareQueue
	for _, free := range []int{1, 50} {
		if got, want := share(waiting, running, free, types.NamespacedName{}, &buf), shareByScan(waiting, running, free, types.NamespacedName{}); !maps.Equal(got, want) {
			b.Fatalf("free %d: share %v, definition %v", free, got, want)
		}
		b.Run(fmt.Sprintf("share/free=%d", free), func(b *testing.B) {
			for b.Loop() {
				share(waiting, running, free, types.NamespacedName{}, &buf)
			}
		})
		b.Run(fmt.Sprintf("definition/free=%d", free), func(b *testing.B) {
			for b.Loop() {
				shareByScan(waiting, running, free, types.NamespacedName{})
			}
		})
	}
}
