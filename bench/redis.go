package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"time"
)

// The Redis store in the latency scenario: a redis-server of the bench's
// own on a free loopback port, with no persistence, started for one round
// and stopped by its PID.

// errNoRedis says redis-server is not installed: the Redis contender is
// skipped and the section says so.
var errNoRedis = errors.New("redis-server is not installed (apt-get install redis-server)")

// startRedis starts redis-server on a free port of 127.0.0.1 and returns
// its URL once it answers; stop kills it by its PID and waits for it.
func startRedis(ctx context.Context) (url string, stop func(), err error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", nil, errNoRedis
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("find a free port: %w", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.CommandContext(ctx, bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start redis-server: %w", err)
	}
	stop = func() {
		cmd.Process.Kill()
		cmd.Wait()
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return "redis://" + addr + "/0", stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, fmt.Errorf("redis-server on %s did not answer: %w", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
