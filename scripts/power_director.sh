#!/usr/bin/env bash
# A loopback power director for tests and rehearsals (never submittable: no meter): power-dev's
# unmodified server on 127.0.0.1:PORT driving `mlperf ptd_standin` as its PTDaemon, and
# `mlperf ntp_standin` answering NTP on 127.0.0.1:123 (binding it needs root).
#
# Usage: scripts/power_director.sh MLPERF POWER_DEV DIR PORT [ptd_standin flags...]
#   MLPERF     the mlperf binary (absolute path)
#   POWER_DEV  a checkout of mlcommons/power-dev (the round's accepted c4b3ad8)
#   DIR        where server.conf, the stand-in's wrapper and the server's output (server.out) go
#   PORT       the server's port; the stand-in listens on PORT+1
#   flags      e.g. --watts 120 --testing_watts 118 (see `mlperf ptd_standin --help`)
#
# It runs in the foreground until stopped. Start it as a process group of its own
# (`setsid scripts/power_director.sh ...`) and stop the whole group (`kill -TERM -- -PGID`): the
# server, the stand-in it starts and the NTP stand-in all go, whatever state the server is in.
set -euo pipefail
BIN=$1 POWER_DEV=$2 DIR=$3 PORT=$4
shift 4
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
# power-dev's server starts PTDaemon as `[ptd] ptd` with PTDaemon's own command line; the wrapper
# hands that line to the stand-in after `--`.
printf '#!/bin/sh\nexec %q ptd_standin' "$BIN" > "$DIR/ptd-standin.sh"
printf ' %q' "$@" >> "$DIR/ptd-standin.sh"
printf ' -- "$@"\n' >> "$DIR/ptd-standin.sh"
chmod 755 "$DIR/ptd-standin.sh"
cat > "$DIR/server.conf" <<EOF
[server]
ntpServer = 127.0.0.1
listen = 127.0.0.1 $PORT
[ptd]
ptd = $DIR/ptd-standin.sh
[analyzer1]
deviceType = 49
interfaceFlag = -U
devicePort = C2PH13047V
networkPort = $((PORT + 1))
EOF
"$BIN" ntp_standin --listen=127.0.0.1:123 > "$DIR/ntp.out" 2>&1 &
cd "$DIR"
PYTHONPATH=$POWER_DEV exec python3 "$POWER_DEV/ptd_client_server/server.py" -c server.conf > "$DIR/server.out" 2>&1
