#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Linux nodes' network and shared directory (docs/linux.rst), checked by
# tests/linux/cases.py (case network): node 2 reaches the host at 10.0.2.2,
# serves HTTP on its port 7000 (forwarded by the launcher), reads a file
# the host wrote into the run directory and writes one back; the other
# nodes just exit 0.  Arguments: the host's port, a token.
[ "$TEMPEST_NODE" = 2 ] || exit 0
port=$1 token=$2 run=/run/tempest
echo "node 2 says $token" | nc 10.0.2.2 "$port" || exit 10
mkdir -p /tmp/www && echo "node 2 serves $token" > /tmp/www/index.html
httpd -p 7000 -h /tmp/www || exit 11
read -r line < "$run/from-host" || exit 12
echo "node 2 read: $line" > "$run/from-node" || exit 13
echo "node 2: waiting for the host"
i=0
while [ ! -e "$run/done" ]; do
    sleep 0.2
    i=$((i + 1))
    [ $i -lt 1500 ] || exit 14
done
echo "node 2: done"
