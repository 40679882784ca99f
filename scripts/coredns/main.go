// A CoreDNS with only the plugins the guard's DNS benchmark uses (bind, template, forward), built from the Go module
// proxy by benchmarks/guard_dns.py into a cache directory; never committed as a binary.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/template"
)

func init() {
	// Plugin order for this build: bind picks the address, a template answers the denied names, forward sends the
	// rest upstream.
	dnsserver.Directives = []string{"bind", "template", "forward"}
}

func main() {
	coremain.Run()
}
