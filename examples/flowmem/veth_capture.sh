#!/usr/bin/env bash
# Records captures of real TCP traffic with loss: two network namespaces joined by a veth pair,
# an XDP program on each veth end dropping a share of the TCP packets (this kernel has no
# netem), a Python transfer in both directions over IPv4 and IPv6, and tcpdump on both ends
# (the sender's end sees every transmission, retransmissions included; the receiver's end sees
# only what XDP let through, so holes and out-of-order segments). Needs root, iproute2, clang,
# tcpdump.
#   examples/flowmem/veth_capture.sh OUT_DIR [DROP_PERMILLE] [BYTES]
set -euo pipefail
out=${1:?usage: veth_capture.sh OUT_DIR [DROP_PERMILLE] [BYTES]}
permille=${2:-30}
bytes=${3:-3000000}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
tag=flw$$
ns1=${tag}a ns2=${tag}b
obj=$out/xdp_drop.o
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  ip netns del "$ns1" 2>/dev/null || true
  ip netns del "$ns2" 2>/dev/null || true
}
trap cleanup EXIT

clang -O2 -g -target bpf -DDROP_PERMILLE="$permille" \
  -I/usr/include/"$(gcc -print-multiarch)" -c "$here/xdp_drop.c" -o "$obj"
ip netns add "$ns1"
ip netns add "$ns2"
ip link add veth-a netns "$ns1" type veth peer name veth-b netns "$ns2"
for ns in "$ns1" "$ns2"; do
  ip -n "$ns" link set lo up
done
ip -n "$ns1" addr add 10.77.0.1/24 dev veth-a
ip -n "$ns2" addr add 10.77.0.2/24 dev veth-b
ip -n "$ns1" addr add fd77::1/64 dev veth-a nodad
ip -n "$ns2" addr add fd77::2/64 dev veth-b nodad
ip -n "$ns1" link set veth-a up
ip -n "$ns2" link set veth-b up
# Wire-sized segments (no TSO/GSO/GRO super-packets) so each capture record is one segment.
for pair in "$ns1 veth-a" "$ns2 veth-b"; do
  set -- $pair
  ip netns exec "$1" ethtool -K "$2" tso off gso off gro off >/dev/null 2>&1 || true
  ip netns exec "$1" ip link set dev "$2" xdp obj "$obj" sec xdp
done

ip netns exec "$ns1" tcpdump -i veth-a -w "$out/sender_side.pcap" -s 0 -U tcp 2>/dev/null &
pids+=($!)
ip netns exec "$ns2" tcpdump -i veth-b -w "$out/receiver_side.pcapng" --time-stamp-precision=nano -s 0 -U tcp 2>/dev/null &
pids+=($!)
sleep 1

# Server: for each connection, read everything, then send back a reply of half the size.
server='
import socket, sys
fam = socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET
s = socket.socket(fam, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(4)
for _ in range(int(sys.argv[3])):
    c, _ = s.accept()
    n = 0
    while True:
        b = c.recv(65536)
        if not b: break
        n += len(b)
    c.sendall(bytes((i * 7 + 3) % 251 for i in range(n // 2)))
    c.close()
'
client='
import socket, sys
fam = socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET
c = socket.create_connection((sys.argv[1], int(sys.argv[2])))
n = int(sys.argv[3])
body = b"".join(b"GET /object/%06d HTTP/1.1\r\nHost: flowmem\r\n\r\n" % i for i in range(n // 40 + 1))[:n]
c.sendall(body)
c.shutdown(socket.SHUT_WR)
got = 0
while True:
    b = c.recv(65536)
    if not b: break
    got += len(b)
print(sys.argv[1], "sent", n, "received", got)
'
ip netns exec "$ns2" python3 -c "$server" 10.77.0.2 8080 1 &
pids+=($!)
ip netns exec "$ns2" python3 -c "$server" fd77::2 8443 1 &
pids+=($!)
sleep 0.5
ip netns exec "$ns1" python3 -c "$client" 10.77.0.2 8080 "$bytes"
ip netns exec "$ns1" python3 -c "$client" fd77::2 8443 "$bytes"
sleep 1
echo "captures in $out: sender_side.pcap receiver_side.pcapng (XDP drop $permille per mille)"
