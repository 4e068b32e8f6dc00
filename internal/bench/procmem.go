package bench

import (
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
)

// memSampler follows this process's resident memory (VmRSS of /proc/self/status, 0 where
// there is none) and the Go heap in use (runtime.MemStats.HeapInuse): the first sample,
// the peak and the last.
type memSampler struct {
	mu                            sync.Mutex
	startRSS, peakRSS, lastRSS    uint64
	startHeap, peakHeap, lastHeap uint64
}

// reset collects garbage and returns what it can to the OS, so that what an earlier row left
// counts as little as it can, and takes the first sample.
func (m *memSampler) reset() {
	runtime.GC()
	debug.FreeOSMemory()
	m.mu.Lock()
	m.peakRSS, m.peakHeap = 0, 0
	m.mu.Unlock()
	m.sample()
	m.mu.Lock()
	m.startRSS, m.startHeap = m.lastRSS, m.lastHeap
	m.mu.Unlock()
}

// sample takes a sample.
func (m *memSampler) sample() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss := readRSS()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lastRSS, m.lastHeap = rss, ms.HeapInuse
	m.peakRSS, m.peakHeap = max(m.peakRSS, rss), max(m.peakHeap, ms.HeapInuse)
}

// readRSS is VmRSS from /proc/self/status in bytes, 0 when it cannot be read.
func readRSS() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		v, ok := bytes.CutPrefix(line, []byte("VmRSS:"))
		if !ok {
			continue
		}
		f := bytes.Fields(v) // "45012", "kB"
		if len(f) < 1 {
			return 0
		}
		n, err := strconv.ParseUint(string(f[0]), 10, 64)
		if err != nil {
			return 0
		}
		return n * 1024
	}
	return 0
}
