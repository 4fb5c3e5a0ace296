package bench

import (
	"runtime/debug"
	"sync"
	"time"
)

// peakRSS is the process's peak resident set size so far (VmHWM), in bytes.
func peakRSS() int64 { return procField("/proc/self/status", "VmHWM:") }

// currentRSS is the process's resident set size now (VmRSS), in bytes.
func currentRSS() int64 { return procField("/proc/self/status", "VmRSS:") }

// rssSampler records the largest RSS seen while a phase runs. VmHWM cannot
// be read per phase (it only grows, and resetting it through clear_refs is
// not allowed everywhere), so VmRSS is sampled every 20 ms instead.
type rssSampler struct {
	stop chan struct{}
	once sync.Once
	done sync.WaitGroup
	max  int64
}

// sampleRSS returns the OS the memory earlier phases left free, then starts
// sampling.
func sampleRSS() *rssSampler {
	debug.FreeOSMemory()
	s := &rssSampler{stop: make(chan struct{}), max: currentRSS()}
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				s.max = max(s.max, currentRSS())
			}
		}
	}()
	return s
}

// Stop ends sampling and returns the largest RSS seen, in bytes. It may be
// called more than once.
func (s *rssSampler) Stop() int64 {
	s.once.Do(func() { close(s.stop) })
	s.done.Wait()
	return max(s.max, currentRSS())
}
