package main

import (
	"bufio"
	"context"
	"fmt"
	"log"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func maxprocs() int { return runtime.GOMAXPROCS(0) }

// cpuBusy samples /proc/stat over d and returns the share of the machine's
// CPU time that was busy: taken while the benchmark itself is idle, it is how
// much other work is running. ok is false where /proc/stat cannot be read.
func cpuBusy(d time.Duration) (busy float64, ok bool) {
	idle0, total0, ok0 := cpuTimes()
	time.Sleep(d)
	idle1, total1, ok1 := cpuTimes()
	if !ok0 || !ok1 || total1 <= total0 {
		return 0, false
	}
	return 1 - float64(idle1-idle0)/float64(total1-total0), true
}

// cpuTimes returns the idle (idle + iowait) and total jiffies of all CPUs.
func cpuTimes() (idle, total uint64, ok bool) {
	line := firstLine(readFile("/proc/stat"))
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0, 0, false
	}
	for i, v := range f[1:] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		total += n
		if i == 3 || i == 4 {
			idle += n
		}
	}
	return idle, total, true
}

// otherWork describes how busy the machine was just before a scenario.
func otherWork() string {
	busy, ok := cpuBusy(500 * time.Millisecond)
	if !ok {
		return "CPU use of other work unknown"
	}
	if busy > 0.2 {
		log.Printf("WARNING: other work is using %.0f%% of the CPU: the timings will be skewed", busy*100)
	}
	return fmt.Sprintf("other work used %.0f%% of the CPU in the half second before it", busy*100)
}

// loadAverage is the one-minute load average, as uptime prints it: with
// others' work on the machine, the figure to quote beside a timing.
func loadAverage() string {
	if f := strings.Fields(readFile("/proc/loadavg")); len(f) > 0 {
		return f[0]
	}
	return "unknown"
}

// fuseboxVersion names the checkout fusebox was built from.
func fuseboxVersion(ctx context.Context, repo string) string {
	return output(ctx, repo, "git", "describe", "--always", "--dirty")
}

// machineReport describes the machine and the tools the run measured; each
// scenario's section says when it ran, on which commit and under what load.
func machineReport(ctx context.Context, t *tools, quick bool) string {
	var b strings.Builder
	if quick {
		b.WriteString("**Quick smoke run (`-quick`): shorter ticks and fewer runs; these figures are not representative.**\n\n")
	}
	faketime := "not installed: the curl contender was skipped"
	if t.faketime != "" {
		faketime = t.faketime
	}
	rows := [][]string{
		{"CPU", fmt.Sprintf("%d cores (nproc), %s", runtime.NumCPU(), cpuModel())},
		{"kernel", firstLine(readFile("/proc/sys/kernel/osrelease"))},
		{"Go", runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH},
		{"bash", firstLine(output(ctx, "", "bash", "--version"))},
		{"curl", firstFields(output(ctx, "", "curl", "--version"), 4)},
		{"libfaketime", faketime},
	}
	b.WriteString(mdTable([]string{"", "this machine"}, "ll", rows))
	return b.String()
}

// niceness says at which scheduling priority the benchmark ran: on a shared
// machine, a run under nice -n -15 keeps most of the others' noise out.
func niceness() string {
	n, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	if err != nil {
		return "niceness unknown"
	}
	// The raw syscall returns 20 - nice.
	return fmt.Sprintf("nice %d", 20-n)
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

func readFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "unknown"
	}
	return string(b)
}

func output(ctx context.Context, dir, name string, args ...string) string {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

// firstFields returns the first n words of s's first line.
func firstFields(s string, n int) string {
	f := strings.Fields(firstLine(s))
	return strings.Join(f[:min(n, len(f))], " ")
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
