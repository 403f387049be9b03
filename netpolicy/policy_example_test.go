package netpolicy_test

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/dsh-dev/dsh/netpolicy"
)

func ExamplePolicy_Decide() {
	p, err := netpolicy.New(netpolicy.Config{
		Default: "public",
		Ports:   []int{80, 443},
		Allow:   []string{"127.0.0.1:8080"},
		Deny:    []string{"tracker.example.com"},
	})
	if err != nil {
		panic(err)
	}
	for _, c := range []struct {
		host string
		addr string
		port uint16
	}{
		{"", "8.8.8.8", 443},
		{"", "10.0.0.1", 443},
		{"0x7f.1", "", 8080},
		{"tracker.example.com", "93.184.215.14", 443},
		{"", "::ffff:169.254.169.254", 80},
	} {
		var a netip.Addr
		if c.addr != "" {
			a = netip.MustParseAddr(c.addr)
		}
		d := p.Decide(c.host, a, c.port)
		fmt.Printf("%-5s %s\n", d.Verdict, d.Rule)
	}
	// Output:
	// allow default:public
	// deny  special:10.0.0.0/8
	// allow allow:127.0.0.1:8080
	// deny  deny:tracker.example.com
	// deny  always-deny:169.254.169.254
}

func ExampleParseURL() {
	u, t, err := netpolicy.ParseURL("http://１２７。０。０。１:8080/path")
	fmt.Println(u, t.Addr, t.Port, err)
	_, _, err = netpolicy.ParseURL("http://user@example.com/")
	fmt.Println(err)
	// Output:
	// http://127.0.0.1:8080/path 127.0.0.1 8080 <nil>
	// netpolicy: invalid target "http://user@example.com/": URLs with userinfo (user@ or user:pass@) are not accepted; remove the part before '@'
}

func ExampleDialer_Check() {
	d := &netpolicy.Dialer{
		Policy:   netpolicy.MustNew(netpolicy.WebDefault()),
		Resolver: netpolicy.StubResolver{"rebind.example": {netip.MustParseAddr("93.184.215.14"), netip.MustParseAddr("10.0.0.1")}},
	}
	dec, addrs, _ := d.Check(context.Background(), "rebind.example", 443)
	fmt.Println(dec.Verdict, dec.Rule, addrs)
	// Output:
	// deny special:10.0.0.0/8 [93.184.215.14 10.0.0.1]
}
