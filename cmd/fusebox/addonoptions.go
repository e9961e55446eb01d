package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// addonOptions are the options of fusebox's Home Assistant add-on
// (packaging/ha-addon/fusebox/config.yaml), as the Supervisor writes what
// the user set to /data/options.json. The add-on's image has no shell to
// turn them into flags, so serve reads them itself.
type addonOptions struct {
	Token string   `json:"token"`
	Hosts []string `json:"hosts"`
}

// readAddonOptions reads the options file at path. A key the add-on does
// not define is an error, and so is an empty token: a daemon off loopback
// needs one, and the user sets it in the add-on's Configuration tab.
func readAddonOptions(path string) (addonOptions, error) {
	var o addonOptions
	b, err := os.ReadFile(path)
	if err != nil {
		return o, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		return o, fmt.Errorf("%s: %w", path, err)
	}
	o.Token = strings.TrimSpace(o.Token)
	if o.Token == "" {
		return o, fmt.Errorf("%s: the token is empty: set one in the add-on's Configuration tab", path)
	}
	return o, nil
}

// addonHosts returns the Host names the add-on's daemon accepts beside
// hosts: those of its options, and the container's hostname, which the
// Supervisor sets to the add-on's name on its network (local-fusebox for a
// local add-on), the name the Node-RED add-on calls it by.
func addonHosts(hosts []string, o addonOptions) []string {
	all := append(append([]string(nil), hosts...), o.Hosts...)
	if h, err := os.Hostname(); err == nil && h != "" {
		all = append(all, h)
	}
	return all
}
