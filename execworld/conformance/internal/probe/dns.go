package main

import (
	"bufio"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"
)

// connect sends "CONNECT target" to the proxy named by HTTP_PROXY for each
// target (host:port) and prints the proxy's status line.
func connect(targets []string) {
	pu, err := url.Parse(os.Getenv("HTTP_PROXY"))
	if err != nil || pu.Host == "" {
		fmt.Printf("noproxy HTTP_PROXY %q\n", os.Getenv("HTTP_PROXY"))
		return
	}
	for _, t := range targets {
		c, err := net.DialTimeout("tcp", pu.Host, 3*time.Second)
		if err != nil {
			fmt.Printf("error %s %v\n", t, oneLine(err))
			continue
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", t, t)
		line, err := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if err != nil {
			fmt.Printf("error %s %v\n", t, oneLine(err))
			continue
		}
		fmt.Printf("connect %s %s\n", t, strings.TrimSpace(line))
	}
}
