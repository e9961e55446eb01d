package config

import (
	"slices"
	"strings"
	"testing"
)

func TestStateTakesARedisURLWithItsPasswordSecret(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		files      map[string]string
		want       string
	}{
		{"literal password", "state: redis://fb:lit3ral@nas.lan:6379/2\n", nil, "redis://fb:lit3ral@nas.lan:6379/2"},
		{"password from ${file:}", "state: redis://:${file:/run/redis.pw}@nas.lan:6379/0\n",
			map[string]string{"/run/redis.pw": "lit3ral\n"}, "redis://:lit3ral@nas.lan:6379/0"},
		{"whole URL from !secret", "state: !secret redis\n",
			map[string]string{"/etc/fusebox/secrets.yaml": "redis: rediss://u:lit3ral@nas.lan:6380/0\n"}, "rediss://u:lit3ral@nas.lan:6380/0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse("/etc/fusebox/config.yaml", []byte(tc.yaml), testEnv(nil, tc.files))
			if err != nil {
				t.Fatal(err)
			}
			if c.State != tc.want {
				t.Errorf("State = %q, want %q (a URL is not a dir relative to the config)", c.State, tc.want)
			}
			if !slices.Contains(c.Secrets, "lit3ral") {
				t.Errorf("Secrets = %q, want the password in them", c.Secrets)
			}
		})
	}
}

func TestStateRejectsARedisURLWithoutHost(t *testing.T) {
	_, err := Parse("/etc/fusebox/config.yaml", []byte("state: redis://:pw@/0\n"), testEnv(nil, nil))
	if err == nil || !strings.Contains(err.Error(), "needs a host") || strings.Contains(err.Error(), ":pw@") {
		t.Errorf("Parse = %v, want a missing host reported without the password", err)
	}
}
