package metrics

import "runtime"

// Process returns the families of the running process itself, under the
// names client_golang's Go and process collectors give them, so that a
// dashboard made for any Go service reads the daemon too: go_goroutines
// everywhere, and where the system tells them (Linux's /proc),
// process_resident_memory_bytes, process_open_fds and process_max_fds.
func Process() []*Family {
	g := New("go_goroutines", "gauge", "Number of goroutines that currently exist.")
	g.Add(float64(runtime.NumGoroutine()))
	fams := []*Family{g}
	if rss, ok := residentBytes(); ok {
		f := New("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.")
		f.Add(rss)
		fams = append(fams, f)
	}
	if open, ok := openFDs(); ok {
		f := New("process_open_fds", "gauge", "Number of open file descriptors.")
		f.Add(open)
		fams = append(fams, f)
	}
	if limit, ok := maxFDs(); ok {
		f := New("process_max_fds", "gauge", "Maximum number of open file descriptors.")
		f.Add(limit)
		fams = append(fams, f)
	}
	return fams
}
