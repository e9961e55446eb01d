// Command fakeapis serves stand-ins for OpenWeatherMap, wttr.in, Open-Meteo
// and Home Assistant on 127.0.0.1, so the worked examples of docs/call.md run as
// documented:
//
//	go build -o fakeapis ./examples/fakeapis
//	./fakeapis start        # returns once it listens: "ready on http://127.0.0.1:8089 (pid N)"
//	curl -X POST 127.0.0.1:8089/_fail/openweathermap   # make one fail
//	curl -X POST '127.0.0.1:8089/_slow/openweathermap?for=5s'   # make it answer after 5s
//	curl -X POST 127.0.0.1:8089/_heal/openweathermap   # and heal it
//	./fakeapis stop         # stops it and waits until it has exited
//
// "fakeapis serve" (or no command) serves in the foreground, printing the
// ready line once it listens, until SIGINT or SIGTERM.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/fusebox-hq/fusebox/internal/fakeapis"
)

func main() {
	fs := flag.NewFlagSet("fakeapis", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:8089", "listen `ADDRESS` (loopback; port 0 picks a free one)")
	key := fs.String("appid", "demo-key", "the OpenWeatherMap API key it accepts")
	token := fs.String("token", "demo-token", "the Home Assistant token it accepts")
	pidFile := fs.String("pid-file", "fakeapis.pid", "start writes, and stop reads, the server's pid here")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: fakeapis [serve|start|stop] [flags]")
		fs.PrintDefaults()
	}
	cmd, args := "serve", os.Args[1:]
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	fs.Parse(args)
	var err error
	switch cmd {
	case "serve":
		err = serve(*addr, *key, *token)
	case "start":
		err = start(*pidFile, args)
	case "stop":
		err = stop(*pidFile)
	default:
		fs.Usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeapis:", err)
		os.Exit(1)
	}
}

// readyFD names the file descriptor a server started by start reports on:
// its ready line, or why it could not listen. Its stdout and stderr are
// /dev/null, so that nothing it writes later can meet a closed pipe.
const readyFD = "FAKEAPIS_READY_FD"

// serve listens, says so on stdout (or readyFD), and serves until SIGINT
// or SIGTERM.
func serve(addr, key, token string) error {
	report := os.Stdout
	if os.Getenv(readyFD) == "3" {
		report = os.NewFile(3, "ready")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(report, err)
		return err
	}
	srv := &http.Server{Handler: fakeapis.New(key, token), ReadHeaderTimeout: 5 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(shut)
	}()
	fmt.Fprintf(report, "ready on http://%s (pid %d): fake OpenWeatherMap, wttr.in, Open-Meteo and Home Assistant\n", ln.Addr(), os.Getpid())
	if report != os.Stdout {
		report.Close()
	}
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// start runs "fakeapis serve" in the background, in a session of its own
// (the shell's job control and a closed terminal leave it alone), and
// returns once it listens, having written its pid to pidFile.
func start(pidFile string, args []string) error {
	if pid, ok := running(pidFile); ok {
		return fmt.Errorf("already running (pid %d, %s); ./fakeapis stop first", pid, pidFile)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	cmd := exec.Command(self, append([]string{"serve"}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Env = append(os.Environ(), readyFD+"=3")
	cmd.ExtraFiles = []*os.File{w}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return err
	}
	line, _ := bufio.NewReader(r).ReadString('\n')
	if !strings.HasPrefix(line, "ready ") {
		cmd.Wait()
		return fmt.Errorf("the server did not start: %s", strings.TrimSpace(line))
	}
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		cmd.Process.Kill()
		return err
	}
	fmt.Print(line)
	return nil
}

// stop sends the server in pidFile SIGTERM and waits until it has exited.
func stop(pidFile string) error {
	pid, ok := running(pidFile)
	if !ok {
		os.Remove(pidFile)
		return fmt.Errorf("not running (no live pid in %s)", pidFile)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return err
	}
	for deadline := time.Now().Add(5 * time.Second); syscall.Kill(pid, 0) == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	fmt.Printf("stopped (pid %d)\n", pid)
	return os.Remove(pidFile)
}

// running returns the pid in pidFile when that process is alive.
func running(pidFile string) (int, bool) {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, syscall.Kill(pid, 0) == nil
}
