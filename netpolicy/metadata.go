package netpolicy

import "net/netip"

// Cloud metadata endpoints hand out credentials to whoever asks from
// inside the instance. No policy entry can allow them: they are judged
// before explicit allow and deny, and in every IPv6 disguise (mapped,
// NAT64, 6to4, Teredo, compatible, SIIT).

// metadataNames are the DNS names of metadata services, normalised
// (lower case, no trailing dot).
var metadataNames = map[string]string{
	"metadata":                     "GCE/Kubernetes short name of the metadata server",
	"metadata.google.internal":     "Google Cloud metadata server",
	"metadata.goog":                "Google Cloud metadata server",
	"instance-data":                "AWS EC2 instance metadata (short name)",
	"instance-data.ec2.internal":   "AWS EC2 instance metadata",
	"metadata.tencentyun.com":      "Tencent Cloud metadata server",
	"metadata.platformequinix.com": "Equinix Metal metadata server",
	"metadata.packet.net":          "Equinix Metal (Packet) metadata server",
}

// metadataAddrs are the addresses of metadata and instance-local control
// services.
var metadataAddrs = map[netip.Addr]string{
	netip.MustParseAddr("169.254.169.254"): "instance metadata (AWS, GCP, Azure, OpenStack, DigitalOcean, ...)",
	netip.MustParseAddr("169.254.169.253"): "AWS VPC DNS resolver",
	netip.MustParseAddr("169.254.169.123"): "AWS time sync service",
	netip.MustParseAddr("169.254.170.2"):   "AWS ECS task metadata and credentials",
	netip.MustParseAddr("169.254.170.23"):  "AWS EKS pod identity credentials",
	netip.MustParseAddr("169.254.0.23"):    "Tencent Cloud metadata",
	netip.MustParseAddr("100.100.100.200"): "Alibaba Cloud metadata",
	netip.MustParseAddr("192.0.0.192"):     "Oracle Cloud metadata",
	netip.MustParseAddr("168.63.129.16"):   "Azure WireServer / host agent",
	netip.MustParseAddr("fd00:ec2::254"):   "AWS EC2 instance metadata (IPv6)",
	netip.MustParseAddr("fd00:ec2::253"):   "AWS VPC DNS resolver (IPv6)",
	netip.MustParseAddr("fd00:ec2::123"):   "AWS time sync service (IPv6)",
	netip.MustParseAddr("fd00:ec2::23"):    "AWS EKS pod identity credentials (IPv6)",
	netip.MustParseAddr("fd20:ce::254"):    "Google Cloud metadata (IPv6)",
}

// metadataText is Decision.Rule and Reason for each metadata address and
// name, built once so that denials do not allocate. reason[0] is for the
// address itself, reason[1] for an address that embeds it.
type metadataTexts struct {
	rule   string
	reason [2]string
}

var (
	metadataText = func() map[netip.Addr]metadataTexts {
		m := map[netip.Addr]metadataTexts{}
		for a, why := range metadataAddrs {
			tail := "a cloud metadata address (" + why + "); it can never be allowed"
			m[a] = metadataTexts{rule: "always-deny:" + a.String(), reason: [2]string{
				a.String() + " is " + tail,
				"the address embeds " + a.String() + ", " + tail,
			}}
		}
		return m
	}()
	metadataNameText = func() map[string]metadataTexts {
		m := map[string]metadataTexts{}
		for n, why := range metadataNames {
			r := n + " is a cloud metadata endpoint (" + why + "); it can never be allowed"
			m[n] = metadataTexts{rule: "always-deny:" + n, reason: [2]string{r, r}}
		}
		return m
	}()
)
