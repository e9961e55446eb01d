package packaging_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// The Supervisor's schema for an add-on's config.yaml, written down from
// home-assistant/supervisor's supervisor/apps/validate.py (before 2026,
// supervisor/addons/validate.py), _SCHEMA_APP_CONFIG, and the constants it
// names (supervisor/const.py, supervisor/apps/const.py, apps/options.py,
// supervisor/validate.py). Its keys beyond the required ones are optional;
// the Supervisor drops a key it does not know (REMOVE_EXTRA) without a word,
// so a misspelt key would be lost: the test refuses any key not listed.
var (
	addonRequired = []string{"name", "version", "slug", "description", "arch"}
	addonKeys     = []string{"advanced", "apparmor", "arch", "audio", "auth_api", "backup", "backup_exclude",
		"backup_post", "backup_pre", "boot", "breaking_versions", "description", "devices", "devicetree",
		"discovery", "docker_api", "environment", "full_access", "gpio", "hassio_api", "hassio_role",
		"homeassistant", "homeassistant_api", "host_dbus", "host_ipc", "host_network", "host_pid", "host_uts",
		"image", "ingress", "ingress_entry", "ingress_port", "ingress_stream", "init", "journald",
		"kernel_modules", "legacy", "machine", "map", "name", "options", "panel_admin", "panel_icon",
		"panel_title", "ports", "ports_description", "privileged", "realtime", "schema", "services", "slug",
		"stage", "startup", "stdin", "timeout", "tmpfs", "uart", "udev", "ulimits", "url", "usb", "version",
		"video", "watchdog", "webui"}
	addonArchs    = []string{"aarch64", "amd64", "armhf", "armv7", "i386"} // ARCH_ALL_COMPAT
	addonStartups = []string{"initialize", "system", "services", "application", "once"}
	addonBoots    = []string{"auto", "manual", "manual_only"}
	// MappingType: app_config is addon_config's new name (2026.07), to
	// which the Supervisor migrates it; older Supervisors know only
	// addon_config (from 2023.11, with path:).
	addonMaps     = []string{"data", "config", "ssl", "local_apps", "backup", "share", "media", "homeassistant_config", "all_app_configs", "app_config", "addons", "all_addon_configs", "addon_config"}
	addonMapKeys  = []string{"type", "read_only", "path"}
	reSlug        = regexp.MustCompile(`^[-_.A-Za-z0-9]+$`)
	reDockerPort  = regexp.MustCompile(`^\d+(?:/tcp|/udp)?$`)
	reWatchdog    = regexp.MustCompile(`^(?:https?|\[PROTO:\w+\]|tcp):\/\/\[HOST\]:(\[PORT:\d+\]|\d+).*$`)
	reImageBuild  = regexp.MustCompile(`^([a-zA-Z\-\.:\d{}]+/)*?([\-\w{}]+)/([\-\w{}]+)(:[\.\-\w{}]+)?$`)
	reSchemaValue = regexp.MustCompile(`^(?:|bool|email|url|port|device(?:\((?P<filter>subsystem=[a-z]+)\))?` +
		`|str(?:\((?P<s_min>\d+)?,(?P<s_max>\d+)?\))?|password(?:\((?P<p_min>\d+)?,(?P<p_max>\d+)?\))?` +
		`|int(?:\((?P<i_min>-?\d+)?,(?P<i_max>-?\d+)?\))?|float(?:\((?P<f_min>-?\d*\.?\d+)?,(?P<f_max>-?\d*\.?\d+)?\))?` +
		`|match\((?P<match>.*)\)|list\((?P<list>.+)\))\??$`)
)

func readYAML(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// TestHAAddonConfig checks the add-on repository against the Supervisor's
// schemas: repository.yaml (SCHEMA_REPOSITORY_CONFIG), the add-on's
// config.yaml and build.yaml (SCHEMA_BUILD_CONFIG).
func TestHAAddonConfig(t *testing.T) {
	repo := readYAML(t, "ha-addon/repository.yaml")
	for k := range repo {
		if !slices.Contains([]string{"name", "url", "maintainer"}, k) {
			t.Errorf("repository.yaml: unknown key %q", k)
		}
	}
	if s, _ := repo["name"].(string); s == "" {
		t.Error("repository.yaml: name is required")
	}

	cfg := readYAML(t, "ha-addon/fusebox/config.yaml")
	for _, k := range addonRequired {
		if _, ok := cfg[k]; !ok {
			t.Errorf("config.yaml: %s is required", k)
		}
	}
	for k := range cfg {
		if !slices.Contains(addonKeys, k) {
			t.Errorf("config.yaml: unknown key %q (the Supervisor would drop it)", k)
		}
	}
	for _, k := range []string{"name", "version", "description"} {
		if s, ok := cfg[k].(string); !ok || s == "" {
			t.Errorf("config.yaml: %s: want a string, got %#v", k, cfg[k])
		}
	}
	if s, _ := cfg["slug"].(string); !reSlug.MatchString(s) {
		t.Errorf("config.yaml: slug %q", s)
	}
	arch, _ := cfg["arch"].([]any)
	if len(arch) == 0 {
		t.Error("config.yaml: arch: want a list")
	}
	for _, a := range arch {
		if !slices.Contains(addonArchs, fmt.Sprint(a)) {
			t.Errorf("config.yaml: arch %v", a)
		}
	}
	if s, ok := cfg["startup"].(string); ok && !slices.Contains(addonStartups, s) {
		t.Errorf("config.yaml: startup %q", s)
	}
	if s, ok := cfg["boot"].(string); ok && !slices.Contains(addonBoots, s) {
		t.Errorf("config.yaml: boot %q", s)
	}
	ports, _ := cfg["ports"].(map[string]any)
	for p, host := range ports {
		if !reDockerPort.MatchString(p) {
			t.Errorf("config.yaml: port %q", p)
		}
		if n, ok := host.(uint64); host != nil && (!ok || n < 1 || n > 65535) {
			t.Errorf("config.yaml: port %s: host port %v", p, host)
		}
	}
	if desc, _ := cfg["ports_description"].(map[string]any); len(desc) != len(ports) {
		t.Errorf("config.yaml: ports_description: %v, want one per port", desc)
	}
	if w, ok := cfg["watchdog"].(string); ok && !reWatchdog.MatchString(w) {
		t.Errorf("config.yaml: watchdog %q", w)
	}
	maps, _ := cfg["map"].([]any)
	for _, m := range maps {
		entry, _ := m.(map[string]any)
		for k := range entry {
			if !slices.Contains(addonMapKeys, k) {
				t.Errorf("config.yaml: map entry key %q", k)
			}
		}
		if !slices.Contains(addonMaps, fmt.Sprint(entry["type"])) {
			t.Errorf("config.yaml: map type %v", entry["type"])
		}
	}
	options, _ := cfg["options"].(map[string]any)
	schema, _ := cfg["schema"].(map[string]any)
	for k, v := range schema {
		checkSchemaElement(t, k, v)
		if _, ok := options[k]; !ok && !strings.HasSuffix(fmt.Sprint(v), "?") {
			t.Errorf("config.yaml: schema %s has no default in options", k)
		}
	}
	for k := range options {
		if _, ok := schema[k]; !ok {
			t.Errorf("config.yaml: option %s not in the schema", k)
		}
	}
	// What the add-on's daemon reads: the options cmd/fusebox/addonoptions.go knows.
	if got := slices.Sorted(func(yield func(string) bool) {
		for k := range schema {
			if !yield(k) {
				return
			}
		}
	}); !slices.Equal(got, []string{"hosts", "token"}) {
		t.Errorf("config.yaml: schema keys %v, want those serve --addon-options reads: hosts, token", got)
	}

	// translations/en.yaml (SCHEMA_ADDON_TRANSLATIONS): a name, and a
	// description, for every option the Configuration tab shows, and the
	// ports' descriptions, the same as ports_description's.
	tr := readYAML(t, "ha-addon/fusebox/translations/en.yaml")
	for k := range tr {
		if k != "configuration" && k != "network" {
			t.Errorf("translations/en.yaml: unknown key %q", k)
		}
	}
	named, _ := tr["configuration"].(map[string]any)
	for k := range schema {
		entry, _ := named[k].(map[string]any)
		name, _ := entry["name"].(string)
		desc, _ := entry["description"].(string)
		if name == "" || desc == "" {
			t.Errorf("translations/en.yaml: option %s: want a name and a description, got %v", k, named[k])
		}
	}
	for k := range named {
		if _, ok := schema[k]; !ok {
			t.Errorf("translations/en.yaml: option %s not in the schema", k)
		}
	}
	network, _ := tr["network"].(map[string]any)
	desc, _ := cfg["ports_description"].(map[string]any)
	if fmt.Sprint(network) != fmt.Sprint(desc) {
		t.Errorf("translations/en.yaml: network %v, want ports_description's %v", network, desc)
	}

	build := readYAML(t, "ha-addon/fusebox/build.yaml")
	from, _ := build["build_from"].(map[string]any)
	for a, img := range from {
		if !slices.Contains(addonArchs, a) || !reImageBuild.MatchString(fmt.Sprint(img)) {
			t.Errorf("build.yaml: build_from %s: %v", a, img)
		}
		if !strings.HasSuffix(fmt.Sprint(img), ":"+fmt.Sprint(cfg["version"])) {
			t.Errorf("build.yaml: build_from %s: %v, want the add-on's version %v", a, img, cfg["version"])
		}
	}
	for _, a := range arch {
		if _, ok := from[fmt.Sprint(a)]; !ok {
			t.Errorf("build.yaml: no build_from for arch %v", a)
		}
	}
}

func checkSchemaElement(t *testing.T, key string, v any) {
	t.Helper()
	switch v := v.(type) {
	case string:
		if !reSchemaValue.MatchString(v) {
			t.Errorf("config.yaml: schema %s: %q", key, v)
		}
	case []any: // a list of one element, not itself a list
		for _, e := range v {
			if _, nested := e.([]any); nested {
				t.Errorf("config.yaml: schema %s: a list in a list", key)
			}
			checkSchemaElement(t, key, e)
		}
	case map[string]any:
		for k, e := range v {
			checkSchemaElement(t, key+"."+k, e)
		}
	default:
		t.Errorf("config.yaml: schema %s: %#v", key, v)
	}
}

// TestHAAddonPodman builds the add-on as the Supervisor does (its
// Dockerfile, BUILD_FROM the image of packaging/container/build.sh) and runs
// it as the Supervisor runs an add-on: its own bridge network, the hostname
// local-fusebox (resolved on the network), an init, /data a persistent dir holding the options the
// user set in options.json (0600, root's), and its config folder mapped as
// build says. A stand-in for the Node-RED add-on calls it by hostname.
func TestHAAddonPodman(t *testing.T) {
	t.Parallel()
	p := newPodman(t)
	// The Supervisor runs an add-on with Docker's init (init: true, the
	// default); podman's --init is catatonit.
	if _, err := os.Stat("/usr/libexec/podman/catatonit"); err != nil {
		if _, err := exec.LookPath("catatonit"); err != nil {
			testenv.Skip(t, "no catatonit for podman run --init (apt-get install catatonit)")
		}
	}
	addonTag := p.tag + "-addon"
	build := exec.Command("podman", "build", "--format", "docker", "--build-arg", "BUILD_FROM="+p.tag,
		"-t", addonTag, "-f", "ha-addon/fusebox/Dockerfile", "ha-addon/fusebox")
	build.Env = p.env
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("podman build of the add-on: %v\n%s", err, out)
	}
	t.Cleanup(func() { p.try("rmi", "-f", addonTag) })

	network := "fbt" + randTag() // the Supervisor's hassio network
	gateway := p.network(t, network)
	// An upstream on that network: another fusebox daemon's status page,
	// which needs no token (the bridge exists only once a container is on
	// it, so nothing on the host could listen there before).
	upstream := "upstream-" + randTag()
	p.removeContainer(t, upstream)
	p.run(t, "run", "-d", "--name", upstream, "--network", network, "-e", "FUSEBOX_SERVE_TOKEN=unused-"+randTag(),
		p.tag, "serve", "--listen", "0.0.0.0:8417", "--host", upstream)
	p.waitServing(t, upstream)

	root := t.TempDir()
	addonConfig := filepath.Join(root, "addon_config")
	if err := os.Mkdir(addonConfig, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(addonConfig, "config.yaml"), "circuits:\n  outside:\n    http: {url: \"http://"+upstream+":8417/\"}\n")
	token := "addon-token-" + randTag() + randTag()
	run := func(name, options string) {
		t.Helper()
		dataDir := filepath.Join(root, name) // the add-on's /data
		if err := os.Mkdir(dataDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dataDir, "options.json"), []byte(options), 0o600); err != nil {
			t.Fatal(err)
		}
		p.removeContainer(t, name)
		// The Supervisor's DNS plugin resolves the add-on's hostname on its
		// network; here podman's, through a network alias.
		p.run(t, "run", "-d", "--name", name, "--hostname", "local-fusebox", "--init",
			"--network", network, "--network-alias", "local-fusebox",
			"--add-host", "supervisor:"+gateway, "--add-host", "hassio:"+gateway,
			"-v", dataDir+":/data", "-v", addonConfig+":/etc/fusebox:ro", addonTag)
	}

	name := "addon_" + randTag()
	run(name, `{"token": "`+token+`", "hosts": []}`)
	p.waitServing(t, name)
	t.Run("the image's health check passes", func(t *testing.T) {
		if out, err := p.try("healthcheck", "run", name); err != nil {
			t.Fatalf("%v (%s)", err, out)
		}
	})
	url := "http://local-fusebox:8417/call/outside"
	t.Run("the Node-RED add-on calls it by hostname with the token", func(t *testing.T) {
		tokenFile := filepath.Join(t.TempDir(), "token")
		write(t, tokenFile, token)
		out, code := p.standIn(t, network, nil, nil, standInConfig(url, "/run/secrets/token"), map[string]string{tokenFile: "/run/secrets/token"}, "daemon")
		e := parseEnvelope(t, out)
		var page string // the body, not JSON, comes as a string
		if code != 0 || e.Status == nil || *e.Status != 200 || json.Unmarshal(e.Body, &page) != nil || !strings.Contains(page, "<title>fusebox status</title>") {
			t.Fatalf("exit %d, %s; want the upstream's page", code, out)
		}
		if _, err := os.Stat(filepath.Join(root, name, ".counts", "outside.counts")); err != nil {
			t.Errorf("the circuit's counts in /data: %v", err)
		}
	})
	t.Run("without the token it is refused", func(t *testing.T) {
		out, code := p.standIn(t, network, nil, nil, standInConfig(url, ""), nil, "daemon")
		if e := parseEnvelope(t, out); code == 0 || len(e.Errors) != 1 || !strings.Contains(e.Errors[0].Reason, "401") {
			t.Fatalf("exit %d, %s; want a 401", code, out)
		}
	})
	t.Run("an empty token stops the add-on, saying where to set one", func(t *testing.T) {
		bad := "addon_" + randTag()
		run(bad, `{"token": "", "hosts": []}`)
		code := p.run(t, "wait", bad)
		logs := p.logs(bad)
		if code != "78" || !strings.Contains(logs, "set one in the add-on's Configuration tab") {
			t.Fatalf("exit %s, %q; want 78 and where to set the token", code, logs)
		}
	})
}
