package testenv

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"syscall"
	"testing"
)

// User is a Unix user a test created.
type User struct {
	Name string
	// Cred runs a child process as the user: its uid, its primary gid, and
	// the groups it is in besides (the shared group first).
	Cred *syscall.Credential
}

// Group creates a group and n users in it (with groupadd and useradd, no
// home dir), removed when the test ends, and returns the group's name and
// the users. It skips loudly unless the test runs as root with those tools.
// Users and groups are the host's: it runs only in the heavy suite (Heavy).
func Group(t testing.TB, n int) (group string, users []User) {
	t.Helper()
	Heavy(t)
	if os.Geteuid() != 0 {
		Skip(t, "creating users needs root")
	}
	for _, tool := range []string{"groupadd", "useradd", "userdel", "groupdel"} {
		if _, err := exec.LookPath(tool); err != nil {
			Skip(t, "%s is not installed", tool)
		}
	}
	sh := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	tag := strconv.FormatUint(rand.Uint64()%1e8, 36)
	group = "fbg" + tag
	sh("groupadd", group)
	t.Cleanup(func() { exec.Command("groupdel", group).Run() })
	for i := range n {
		name := "fb" + string(rune('a'+i)) + tag
		sh("useradd", "-M", "-N", "-G", group, "-s", "/bin/sh", name)
		t.Cleanup(func() { exec.Command("userdel", name).Run() })
		users = append(users, User{Name: name, Cred: credential(t, name)})
	}
	return group, users
}

// credential returns name's uid, with gid and groups its primary and the
// groups it is in besides.
func credential(t testing.TB, name string) *syscall.Credential {
	t.Helper()
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	gids, err := u.GroupIds()
	if err != nil {
		t.Fatal(err)
	}
	c := &syscall.Credential{}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	c.Uid, c.Gid = uint32(uid), uint32(gid)
	for _, g := range gids {
		if n, _ := strconv.Atoi(g); g != u.Gid {
			c.Groups = append(c.Groups, uint32(n))
		}
	}
	if len(c.Groups) == 0 {
		t.Fatalf("%s is in no group besides its own: %v", name, gids)
	}
	return c
}
