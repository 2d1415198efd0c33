#!/usr/bin/env bash
# A private local Ray head for tests and benchmarks: loopback only, free ports, its own temp folder, small
# footprint (2 CPUs, no GPU, 80 MB object store). Stopping it ends only the processes that carry DIR on their
# command line (the head's own daemons and workers, and trial jobs whose worker folder is under DIR): other
# Ray instances on the machine are left alone (no `ray stop`, which would end them all).
#   ray_head.sh start DIR RAY_EXE [OWNER_PID] -> prints the dashboard address (http://127.0.0.1:PORT); DIR/address
#                                   too. With OWNER_PID, a watcher stops the head when that process is gone (a
#                                   test binary that crashes before its tear-down).
#   ray_head.sh stop DIR
set -uo pipefail
cmd="${1:-}"; dir="${2:-}"
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start DIR RAY_EXE | stop DIR" >&2; exit 2; }

sid_of() { awk '{print $6}' "/proc/$1/stat" 2>/dev/null; }  # field 6 of /proc/PID/stat: the session id

stop_head() {
  local pids=() p sids=" " own
  own="$(sid_of $$)"
  for p in /proc/[0-9]*; do
    p="${p#/proc/}"
    [ "$p" = "$$" ] && continue
    if cat "/proc/$p/cmdline" 2>/dev/null | tr "\0" " " | grep -qF -- "$dir"; then
      pids+=("$p")
      local s; s="$(sid_of "$p")"
      [ -n "$s" ] && [ "$s" != "$own" ] && sids+="$s "
    fi
  done
  # The head was started in a session of its own (setsid): its daemons that renamed themselves
  # (ray::DashboardAgent, ray::RuntimeEnvAgent) or carry no DIR (the Ray client server) are in it too.
  if [ "$sids" != " " ]; then
    for p in /proc/[0-9]*; do
      p="${p#/proc/}"
      [ "$p" = "$$" ] && continue
      case "$sids" in *" $(sid_of "$p") "*) pids+=("$p") ;; esac
    done
  fi
  ((${#pids[@]})) || return 0
  kill -TERM "${pids[@]}" 2>/dev/null
  for _ in $(seq 1 50); do
    local alive=0
    for p in "${pids[@]}"; do [ -d "/proc/$p" ] && alive=1; done
    ((alive)) || return 0
    sleep 0.1
  done
  kill -KILL "${pids[@]}" 2>/dev/null
  return 0
}

case "$cmd" in
  start)
    ray="${3:?RAY_EXE}"
    py="$(dirname "$ray")/python"
    mkdir -p "$dir"
    # Ports: bound to 0 and released at once (a race with another process is possible but unlikely).
    ports=($("$py" -c '
import socket
s=[socket.socket() for _ in range(24)]
for x in s: x.bind(("127.0.0.1",0))
print(" ".join(str(x.getsockname()[1]) for x in s))'))
    workers="$(IFS=,; echo "${ports[*]:9}")"
    export RAY_USAGE_STATS_ENABLED=0
    setsid "$ray" start --head --node-ip-address 127.0.0.1 --port "${ports[0]}" --dashboard-port "${ports[1]}" \
      --node-manager-port "${ports[2]}" --object-manager-port "${ports[3]}" --ray-client-server-port "${ports[4]}" \
      --dashboard-agent-listen-port "${ports[5]}" --dashboard-agent-grpc-port "${ports[6]}" \
      --metrics-export-port "${ports[7]}" --runtime-env-agent-port "${ports[8]}" --worker-port-list "$workers" \
      --temp-dir "$dir/ray" --disable-usage-stats --include-dashboard true --dashboard-host 127.0.0.1 \
      --num-cpus 2 --num-gpus 0 --object-store-memory 80000000 >"$dir/start.log" 2>&1 </dev/null
    rc=$?
    if [ $rc -ne 0 ]; then
      echo "ray start failed (exit $rc): $(tail -n 3 "$dir/start.log" | tr '\n' ' ')" >&2
      stop_head; exit 1
    fi
    address="http://127.0.0.1:${ports[1]}"
    for _ in $(seq 1 120); do
      if "$py" -c "import urllib.request,sys; urllib.request.urlopen('$address/api/version', timeout=2)" 2>/dev/null; then
        echo "$address" > "$dir/address"
        if [ -n "${4:-}" ]; then
          setsid bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 2; done; exec "$2" stop "$3"' _ "$4" "$0" "$dir" \
            >/dev/null 2>&1 </dev/null &
        fi
        echo "$address"
        exit 0
      fi
      sleep 0.5
    done
    echo "the Ray dashboard at $address did not answer within 60 s" >&2
    stop_head; exit 1
    ;;
  stop) stop_head ;;
  *) echo "usage: $0 start DIR RAY_EXE | stop DIR" >&2; exit 2 ;;
esac
