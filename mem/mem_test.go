package mem_test

import (
	"testing"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/mem"
	"github.com/fusebox-hq/fusebox/storetest"
)

func TestStore(t *testing.T) {
	storetest.Run(t, func(*testing.T) fusebox.Admin { return mem.New() })
}
