package explain

import (
	"testing"

	"github.com/fusebox-hq/fusebox/config"
)

// TestEachPolicyKeyOfTheConfigIsShown: explain lists every policy key the
// config's key table has, and no other.
func TestEachPolicyKeyOfTheConfigIsShown(t *testing.T) {
	keys := config.PolicyKeys()
	for _, k := range keys {
		if _, ok := shown[k]; !ok {
			t.Errorf("policy key %s has no entry in shown: say how explain prints it", k)
		}
	}
	if len(shown) != len(keys) {
		t.Errorf("shown has %d keys, the config's table %d: %v", len(shown), len(keys), keys)
	}
}
